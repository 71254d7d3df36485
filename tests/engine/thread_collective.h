#pragma once
// Tensor-parallel ranks as threads of one process, for tests of the forward pass.
#include <algorithm>
#include <barrier>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/forward.h"

namespace sandwich::test {

// Two ranks in one process, each a thread with its own team, exchanging through shared buffers.
struct Exchange {
  explicit Exchange(int n) : n(n), bufs(n), cols(n), bar(n) {}
  int n;
  std::vector<std::vector<float>> bufs;
  std::vector<std::pair<int64_t, int64_t>> cols;  // (offset, width) of each rank's columns
  std::barrier<> bar;
};

class ThreadCollective : public engine::Collective {
 public:
  ThreadCollective(Exchange& x, int rank) : x_(x), rank_(rank) {}
  void all_reduce_sum(float* data, size_t n) override {
    x_.bufs[rank_].assign(data, data + n);
    x_.bar.arrive_and_wait();
    for (size_t i = 0; i < n; ++i) {
      float s = 0;
      for (int r = 0; r < x_.n; ++r) s += x_.bufs[r][i];
      data[i] = s;
    }
    x_.bar.arrive_and_wait();
  }
  void all_gather_columns(const float* local, int64_t rows, int64_t n_local, int64_t offset,
                          float* full, int64_t n_total) override {
    x_.bufs[rank_].assign(local, local + rows * n_local);
    x_.cols[rank_] = {offset, n_local};
    x_.bar.arrive_and_wait();
    for (int r = 0; r < x_.n; ++r)
      for (int64_t i = 0; i < rows; ++i)
        std::copy(x_.bufs[r].begin() + i * x_.cols[r].second,
                  x_.bufs[r].begin() + (i + 1) * x_.cols[r].second,
                  full + i * n_total + x_.cols[r].first);
    x_.bar.arrive_and_wait();
  }

 private:
  Exchange& x_;
  int rank_;
};

}  // namespace sandwich::test
