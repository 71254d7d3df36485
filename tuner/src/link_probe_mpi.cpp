// The MPI side of the link probe (link_probe.h): the only file of the tuner that calls MPI.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/link_probe.h"

#if SANDWICH_HAVE_MPI
#include <mpi.h>
#endif

namespace sandwich::tuner {

#if SANDWICH_HAVE_MPI
namespace {

// Seconds of one round trip of `bytes` between ranks 0 and 1, the best of `reps` timings of
// `iters` trips each (others sharing the machine can only slow a trip down).
double round_trip_s(int rank, std::vector<char>& buf, size_t bytes, int iters, int reps) {
  const int n = static_cast<int>(bytes);
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      if (rank == 0) {
        MPI_Send(buf.data(), n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf.data(), n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf.data(), n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
      }
    }
    best = std::min(best, (MPI_Wtime() - t0) / iters);
  }
  return best;
}

}  // namespace

int run_link_probe() {
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0)
      std::fprintf(stderr, "sandwich-tune link-probe: needs 2 MPI ranks (mpirun -np 2), got %d\n",
                   size);
    MPI_Finalize();
    return 1;
  }
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  char other[MPI_MAX_PROCESSOR_NAME] = {};
  if (rank == 1) MPI_Send(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
  if (rank == 0)
    MPI_Recv(other, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::vector<char> buf(4u << 20, 1);
  round_trip_s(rank, buf, 8, 100, 1);  // warm-up: connections are made on first use
  const double latency_s = round_trip_s(rank, buf, 8, 500, 5) / 2;
  double best_gbs = 0;
  for (size_t bytes : {size_t{1} << 20, size_t{2} << 20, size_t{4} << 20}) {
    const double one_way = round_trip_s(rank, buf, bytes, 8, 3) / 2;
    const double wire = std::max(one_way - latency_s, one_way * 1e-3);
    best_gbs = std::max(best_gbs, static_cast<double>(bytes) / wire / 1e9);
  }
  if (rank == 0) {
    LinkMeasurement m;
    m.latency_us = latency_s * 1e6;
    m.gbs = best_gbs;
    m.hosts = {name, other};
    std::printf("%s\n", m.to_json().dump().c_str());
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}

#else

int run_link_probe() {
  std::fprintf(stderr,
               "sandwich-tune link-probe: this build has no MPI (install libopenmpi-dev and "
               "configure again)\n");
  return 1;
}

#endif

}  // namespace sandwich::tuner
