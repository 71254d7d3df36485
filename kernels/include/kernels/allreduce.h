#pragma once
// All-reduce (sum) among the rank processes of a tensor-parallel group, through one shared
// memory segment every rank has mapped (created once, its fd handed to the others).
//
// Each rank owns a buffer in the segment (buffer()). Data that already lives there is reduced
// in place with no copy: rank r sums chunk r of every rank's buffer and writes the sum back
// into chunk r of all of them (reduce-scatter with write-back), so each rank reads and writes
// the message once. Data elsewhere is copied in and out; small messages (decode: a few KB per
// token) instead go in one phase through two alternating scratch slots: every rank publishes
// its data and sums all slots itself. Ranks walk the chunks in a circularly shifted order
// (starting after their own), so they never queue on the same block. Sums run in rank order
// 0..R-1 for every element, so every rank gets bitwise the same result; BF16 is summed in FP32.
// Flags sit on their own cache lines.
//
// The naive variant (the paper's starting point) is kept as a baseline: rank 0 copies its data
// to a shared buffer, the other ranks add theirs one after another, everyone copies the result.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"
#include "kernels/dtype.h"

namespace sandwich::kernels {

// The ISA the all-reduce sums messages of `type` (F32 or BF16) with: the widest of AVX512_BF16
// (BF16 only), AVX-512 (F32 only), AVX2 and Scalar that cpu_has() allows.
Isa all_reduce_isa(DType type);

class ShmAllReduce {
 public:
  // Bytes of shared memory for `ranks` ranks and messages of up to capacity_bytes.
  static size_t region_bytes(int ranks, size_t capacity_bytes);

  // region: the zero-filled segment of region_bytes(ranks, capacity) mapped in this process,
  // 64-byte aligned. Every rank constructs one with the same ranks and capacity, its own rank.
  ShmAllReduce(void* region, int ranks, int rank, size_t capacity_bytes);

  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  size_t capacity_bytes() const { return capacity_; }

  // This rank's buffer in the segment (capacity_bytes long). Reducing data in it costs no copy.
  template <class T>
  T* buffer() const {
    return reinterpret_cast<T*>(slot(rank_));
  }

  // In-place sums over all ranks; every rank must make the same calls with the same sizes.
  // Messages larger than the capacity throw std::length_error.
  void all_reduce(float* data, size_t n);
  void all_reduce(bf16_t* data, size_t n);
  void all_reduce_naive(float* data, size_t n);
  void all_reduce_naive(bf16_t* data, size_t n);
  // Returns when every rank has called it as often.
  void barrier();

  // Copied messages up to this many bytes go in one phase.
  static constexpr size_t kOnePhaseBytes = 32 * 1024;

 private:
  template <class T>
  void reduce(T* data, size_t n);
  template <class T>
  void reduce_in_place(size_t n);
  template <class T>
  void reduce_one_phase(T* data, size_t n);
  template <class T>
  void reduce_naive(T* data, size_t n);

  // Control flags, one per cache line.
  std::atomic<uint64_t>& flag(size_t index) const;
  std::atomic<uint64_t>& ready(int r) const { return flag(r); }
  std::atomic<uint64_t>& reduced(int c) const { return flag(ranks_ + c); }
  std::atomic<uint64_t>& small_ready(int r) const { return flag(2 * ranks_ + r); }
  std::atomic<uint64_t>& turn() const { return flag(3 * ranks_); }
  std::atomic<uint64_t>& barrier_count() const { return flag(3 * ranks_ + 1); }
  static size_t flag_count(int ranks) { return 3 * static_cast<size_t>(ranks) + 2; }
  uint8_t* slot(int r) const;                 // rank r's buffer
  uint8_t* small_slot(int set, int r) const;  // one-phase scratch, two sets
  uint8_t* naive_result(int set) const;       // two, alternating

  uint8_t* base_;
  int ranks_, rank_;
  size_t capacity_;
  uint64_t op_ = 0;  // reductions made by this rank; the same on every rank
  uint64_t small_ops_ = 0;
  uint64_t naive_ops_ = 0;
  uint64_t barriers_ = 0;
};

}  // namespace sandwich::kernels
