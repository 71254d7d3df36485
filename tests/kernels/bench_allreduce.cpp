// bench_allreduce: latency and bandwidth of our rank-shifted shared-memory all-reduce, the
// naive shared-memory baseline, and OpenMPI's MPI_Allreduce (its shared-memory transport), for
// FP32 and BF16 messages of 4 KiB to 32 MiB, plus memcpy of the same size for scale.
// Run it under MPI, one process per rank:
//
//   mpirun --allow-run-as-root -np 2 --bind-to core build/bin/bench_allreduce
//   mpirun --allow-run-as-root -np 4 --oversubscribe build/bin/bench_allreduce   (4 ranks on 2
//   cores)
//
// Every rank runs the same fixed iteration counts (Google Benchmark would pick its own per
// rank); rank 0 reports.
#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "kernels/allreduce.h"

namespace sk = sandwich::kernels;

namespace {

constexpr size_t kMaxBytes = size_t{32} << 20;
int g_rank = 0, g_size = 1;
sk::ShmAllReduce* g_ar = nullptr;

// BF16 sum in FP32 for MPI, as a user of MPI would have to write it.
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = sk::f32_to_bf16(sk::bf16_to_f32(a[i]) + sk::bf16_to_f32(b[i]));
}
MPI_Op g_bf16_op;

enum class Impl { RankShifted, Naive, Mpi, Memcpy };

template <class T, Impl impl>
void run(benchmark::State& st) {
  const size_t bytes = static_cast<size_t>(st.range(0)), n = bytes / sizeof(T);
  std::vector<T> private_data(n), src(n);
  // Ours reduces where the engine keeps the data: in this rank's buffer of the segment.
  T* data = impl == Impl::RankShifted ? g_ar->buffer<T>() : private_data.data();
  for (size_t i = 0; i < n; ++i) {
    if constexpr (sizeof(T) == 4)
      data[i] = 1.0f;
    else
      data[i] = sk::f32_to_bf16(1.0f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto _ : st) {
    switch (impl) {
      case Impl::RankShifted:
        g_ar->all_reduce(data, n);
        break;
      case Impl::Naive:
        g_ar->all_reduce_naive(data, n);
        break;
      case Impl::Mpi:
        if constexpr (sizeof(T) == 4)
          MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        else
          MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_UINT16_T, g_bf16_op,
                        MPI_COMM_WORLD);
        break;
      case Impl::Memcpy:
        std::memcpy(src.data(), data, bytes);
        benchmark::DoNotOptimize(src.data());
        break;
    }
  }
  st.SetBytesProcessed(static_cast<int64_t>(bytes) * st.iterations());
  st.counters["ranks"] = g_size;
  if (g_size > sysconf(_SC_NPROCESSORS_ONLN)) st.SetLabel("oversubscribed");
}

// One registration per size, each with its own fixed count (about 0.2 s at 10 GB/s, 50 to
// 20000 iterations): Iterations() applies to a whole registration.
void register_all() {
  const std::pair<const char*, void (*)(benchmark::State&)> fns[] = {
      {"BM_RankShifted_F32", run<float, Impl::RankShifted>},
      {"BM_Naive_F32", run<float, Impl::Naive>},
      {"BM_MPI_F32", run<float, Impl::Mpi>},
      {"BM_RankShifted_BF16", run<uint16_t, Impl::RankShifted>},
      {"BM_Naive_BF16", run<uint16_t, Impl::Naive>},
      {"BM_MPI_BF16", run<uint16_t, Impl::Mpi>},
      {"BM_Memcpy", run<float, Impl::Memcpy>}};
  for (auto& [name, fn] : fns)
    for (size_t s = 4096; s <= kMaxBytes; s *= 2) {
      const int64_t iters =
          std::clamp<int64_t>(static_cast<int64_t>(2e9 / static_cast<double>(s)), 50, 20000);
      benchmark::RegisterBenchmark((std::string(name) + "/bytes:" + std::to_string(s)).c_str(), fn)
          ->Arg(static_cast<int64_t>(s))
          ->Iterations(iters)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
}

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  MPI_Op_create(bf16_sum, 1, &g_bf16_op);
  // Rank 0 creates the segment; the others map it by name once it exists.
  const size_t region = sk::ShmAllReduce::region_bytes(g_size, kMaxBytes);
  int job = g_rank == 0 ? static_cast<int>(getpid()) : 0;
  MPI_Bcast(&job, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string name = "/sandwich-bench-allreduce-" + std::to_string(job);
  if (g_rank == 0) {
    const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(region)) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  void* p = fd >= 0 ? mmap(nullptr, region, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (p == MAP_FAILED) MPI_Abort(MPI_COMM_WORLD, 1);
  close(fd);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) shm_unlink(name.c_str());
  sk::ShmAllReduce ar(p, g_size, g_rank, kMaxBytes);
  g_ar = &ar;

  register_all();
  benchmark::Initialize(&argc, argv);
  if (g_rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  munmap(p, region);
  MPI_Op_free(&g_bf16_op);
  MPI_Finalize();
  return 0;
}
