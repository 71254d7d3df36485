#include "runtime/decode_stream.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/peak_probes.h"

namespace sandwich::engine {
namespace {

size_t round_up(size_t v, size_t m) {
  return (v + m - 1) / m * m;
}

std::vector<int> cpus_of(const topotree::ServiceConfig& c) {
  std::vector<int> cpus;
  for (const auto& r : c.ranks) cpus.insert(cpus.end(), r.cpus.begin(), r.cpus.end());
  return cpus;
}

}  // namespace

DecodeStream::DecodeStream(const topotree::ServiceConfig& config, size_t step_bytes)
    : team_(std::max(1, config.total_threads()), cpus_of(config)),
      bytes_(round_up(std::max<size_t>(step_bytes, size_t{1} << 30),
                      256 * static_cast<size_t>(team_.size()))),
      buf_(static_cast<char*>(std::aligned_alloc(4096, bytes_))) {
  if (!buf_) throw std::runtime_error("no memory for the --stream buffer");
  // First touch on the team's threads: the pages land where the decode threads run.
  team_.parallel_for(static_cast<int64_t>(bytes_ / 4096), [&](int64_t b, int64_t e, int) {
    std::memset(buf_.get() + b * 4096, 1, static_cast<size_t>(e - b) * 4096);
  });
}

double DecodeStream::gbs() {
  const size_t share = bytes_ / static_cast<size_t>(team_.size());
  uint64_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  team_.run([&](int tid, int) {
    const uint64_t x = kernels::stream_read(buf_.get() + share * static_cast<size_t>(tid), share);
    if (x == 42) sink += x;  // keeps the reads
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sink == 1 ? 0 : static_cast<double>(bytes_) / s / 1e9;
}

}  // namespace sandwich::engine
