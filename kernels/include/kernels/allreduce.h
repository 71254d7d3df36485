#pragma once
// All-reduce (sum) among the rank processes of a tensor-parallel group, through one shared
// memory segment every rank has mapped (created once, its fd handed to the others).
//
// The rank-shifted algorithm: each rank copies its data into its own slot; small messages are
// then summed by every rank over all slots in one phase; large ones go as reduce-scatter (rank r
// sums chunk r of every slot into a shared result) then all-gather. Each rank writes and reads
// the chunks in a circularly shifted order (starting after its own), so ranks never queue on
// the same block. Sums run in rank order 0..R-1 for every element, so all ranks get bitwise the
// same result. BF16 data is summed in FP32. Flags live on their own cache lines; two sets of
// slots alternate between calls, so no rank waits for the others to finish reading.
//
// The naive variant (the paper's starting point) is kept as a baseline: rank 0 copies its data
// to a shared buffer, the other ranks add theirs one after another, everyone copies the result.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace sandwich::kernels {

class ShmAllReduce {
 public:
  // Bytes of shared memory for `ranks` ranks and messages of up to capacity_bytes.
  static size_t region_bytes(int ranks, size_t capacity_bytes);

  // region: the zero-filled segment of region_bytes(ranks, capacity) mapped in this process.
  // Every rank constructs one with the same ranks and capacity and its own rank.
  ShmAllReduce(void* region, int ranks, int rank, size_t capacity_bytes);

  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  size_t capacity_bytes() const { return capacity_; }

  // In-place sums over all ranks. Messages larger than the capacity throw std::length_error.
  void all_reduce(float* data, size_t n);
  void all_reduce(bf16_t* data, size_t n);
  void all_reduce_naive(float* data, size_t n);
  void all_reduce_naive(bf16_t* data, size_t n);
  // Returns when every rank has called it as often.
  void barrier();

  // Messages up to this many bytes go in one phase; larger ones as reduce-scatter + all-gather.
  static constexpr size_t kOnePhaseBytes = 64 * 1024;

 private:
  template <class T>
  void reduce(T* data, size_t n);
  template <class T>
  void reduce_naive(T* data, size_t n);

  // Control flags, one per cache line: ready[r], chunk_ready[r][c], reduced[c], turn, barrier.
  std::atomic<uint64_t>& flag(size_t index) const;
  std::atomic<uint64_t>& ready(int r) const { return flag(r); }
  std::atomic<uint64_t>& chunk_ready(int r, int c) const { return flag(ranks_ + r * ranks_ + c); }
  std::atomic<uint64_t>& reduced(int c) const { return flag(ranks_ + ranks_ * ranks_ + c); }
  std::atomic<uint64_t>& turn() const { return flag(2 * ranks_ + ranks_ * ranks_); }
  std::atomic<uint64_t>& barrier_count() const { return flag(2 * ranks_ + ranks_ * ranks_ + 1); }
  static size_t flag_count(int ranks) { return 2 * static_cast<size_t>(ranks) + ranks * ranks + 2; }
  uint8_t* slot(int set, int r) const;
  uint8_t* result(int set) const;

  uint8_t* base_;
  int ranks_, rank_;
  size_t capacity_;
  uint64_t op_ = 0;        // reductions made by this rank; the same on every rank
  uint64_t naive_ops_ = 0;
  uint64_t barriers_ = 0;
};

}  // namespace sandwich::kernels
