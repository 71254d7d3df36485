// The all-reduce's protocol (allreduce.h); the sums themselves are allreduce_<isa>.cpp's.
#include "kernels/allreduce.h"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "allreduce_sum.h"
#include "common/partition.h"
#include "isa_table.h"

namespace sandwich::kernels {
namespace {

constexpr size_t kLine = 64;

size_t round_up(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

// Spins on a flag shared with other processes; yields once it has spun for a while so an
// oversubscribed machine still makes progress.
inline void wait_at_least(const std::atomic<uint64_t>& f, uint64_t v) {
  for (int i = 0; f.load(std::memory_order_acquire) < v; ++i) {
    if (i < 4096)
      _mm_pause();
    else
      sched_yield();
  }
}

// The widest table that this CPU allows and that has a body for the type.
const AllReduceSums& sums_for(DType type) {
  static const AllReduceSums& f32 =
      pick_isa_table({&kAllReduceAvx512Bf16, &kAllReduceAvx512, &kAllReduceAvx2, &kAllReduceScalar},
                     [](const AllReduceSums& s) { return s.f32 != nullptr; });
  static const AllReduceSums& bf16 =
      pick_isa_table({&kAllReduceAvx512Bf16, &kAllReduceAvx512, &kAllReduceAvx2, &kAllReduceScalar},
                     [](const AllReduceSums& s) { return s.bf16 != nullptr; });
  return type == DType::BF16 ? bf16 : f32;
}

void sum_slots(const float* const* src, int R, size_t n, float* out) {
  sums_for(DType::F32).f32(src, R, n, out);
}
void sum_slots(const bf16_t* const* src, int R, size_t n, bf16_t* out) {
  sums_for(DType::BF16).bf16(src, R, n, out);
}

// Chunk c of n elements split into `parts`, in multiples of a cache line of T.
template <class T>
std::pair<size_t, size_t> chunk(size_t n, int parts, int c) {
  const size_t per_line = kLine / sizeof(T);
  const IndexRange lines = partition(static_cast<int64_t>((n + per_line - 1) / per_line), c, parts);
  return {std::min(n, static_cast<size_t>(lines.begin) * per_line),
          std::min(n, static_cast<size_t>(lines.end) * per_line)};
}

}  // namespace

Isa all_reduce_isa(DType type) {
  return sums_for(type).isa;
}

size_t ShmAllReduce::region_bytes(int ranks, size_t capacity_bytes) {
  const size_t cap = round_up(capacity_bytes, kLine);
  return flag_count(ranks) * kLine + static_cast<size_t>(ranks) * cap +
         2 * static_cast<size_t>(ranks) * kOnePhaseBytes + 2 * cap;
}

ShmAllReduce::ShmAllReduce(void* region, int ranks, int rank, size_t capacity_bytes)
    : base_(static_cast<uint8_t*>(region)),
      ranks_(ranks),
      rank_(rank),
      capacity_(round_up(capacity_bytes, kLine)) {
  if (ranks < 1 || ranks > 64 || rank < 0 || rank >= ranks)
    throw std::invalid_argument("all-reduce: invalid rank " + std::to_string(rank) + " of " +
                                std::to_string(ranks));
  if (reinterpret_cast<uintptr_t>(region) % kLine)
    throw std::invalid_argument("all-reduce: region must be 64-byte aligned");
}

std::atomic<uint64_t>& ShmAllReduce::flag(size_t index) const {
  return *reinterpret_cast<std::atomic<uint64_t>*>(base_ + index * kLine);
}

uint8_t* ShmAllReduce::slot(int r) const {
  return base_ + flag_count(ranks_) * kLine + static_cast<size_t>(r) * capacity_;
}

uint8_t* ShmAllReduce::small_slot(int set, int r) const {
  return base_ + flag_count(ranks_) * kLine + static_cast<size_t>(ranks_) * capacity_ +
         (static_cast<size_t>(set) * ranks_ + r) * kOnePhaseBytes;
}

uint8_t* ShmAllReduce::naive_result(int set) const {
  return base_ + flag_count(ranks_) * kLine + static_cast<size_t>(ranks_) * capacity_ +
         2 * static_cast<size_t>(ranks_) * kOnePhaseBytes + static_cast<size_t>(set) * capacity_;
}

// Rank r sums chunk r of every buffer and writes it back into all of them; then it waits until
// every chunk is done. A buffer is only read by the owner of each chunk, and rewritten only by
// it, so nothing else needs ordering.
template <class T>
void ShmAllReduce::reduce_in_place(size_t n) {
  const uint64_t k = ++op_;
  const int R = ranks_, r = rank_;
  ready(r).store(k, std::memory_order_release);
  const auto [b, e] = chunk<T>(n, R, r);
  if (b < e) {
    const T* src[64];
    for (int i = 0; i < R; ++i) {
      const int q = (r + i) % R;  // wait in shifted order; sum in rank order below
      wait_at_least(ready(q), k);
    }
    for (int q = 0; q < R; ++q) src[q] = reinterpret_cast<const T*>(slot(q)) + b;
    // In blocks that stay in L1: sum once into this rank's buffer, then copy to the others.
    constexpr size_t kBlock = 4096 / sizeof(T);
    T* mine = reinterpret_cast<T*>(slot(r));
    for (size_t o = b; o < e; o += kBlock) {
      const size_t len = std::min(kBlock, e - o);
      const T* at[64];
      for (int q = 0; q < R; ++q) at[q] = src[q] + (o - b);
      sum_slots(at, R, len, mine + o);
      for (int i = 1; i < R; ++i) {
        const int q = (r + i) % R;
        std::memcpy(reinterpret_cast<T*>(slot(q)) + o, mine + o, len * sizeof(T));
      }
    }
  }
  reduced(r).store(k, std::memory_order_release);
  for (int i = 1; i < R; ++i) wait_at_least(reduced((r + i) % R), k);
}

// Every rank publishes its data in a scratch slot and sums all of them; the two scratch sets
// alternate, so a rank never overwrites a slot another may still be reading.
template <class T>
void ShmAllReduce::reduce_one_phase(T* data, size_t n) {
  const uint64_t k = ++small_ops_;
  const int set = static_cast<int>(k & 1), R = ranks_, r = rank_;
  std::memcpy(small_slot(set, r), data, n * sizeof(T));
  small_ready(r).store(k, std::memory_order_release);
  const T* src[64];
  for (int i = 0; i < R; ++i) wait_at_least(small_ready((r + i) % R), k);
  for (int q = 0; q < R; ++q) src[q] = reinterpret_cast<const T*>(small_slot(set, q));
  sum_slots(src, R, n, data);
}

template <class T>
void ShmAllReduce::reduce(T* data, size_t n) {
  if (n * sizeof(T) > capacity_)
    throw std::length_error("all-reduce of " + std::to_string(n * sizeof(T)) +
                            " bytes exceeds the segment's " + std::to_string(capacity_));
  if (ranks_ == 1 || n == 0) return;
  T* mine = reinterpret_cast<T*>(slot(rank_));
  if (data == mine) return reduce_in_place<T>(n);
  if (n * sizeof(T) <= kOnePhaseBytes) return reduce_one_phase(data, n);
  std::memcpy(mine, data, n * sizeof(T));
  reduce_in_place<T>(n);
  std::memcpy(data, mine, n * sizeof(T));
}

template <class T>
void ShmAllReduce::reduce_naive(T* data, size_t n) {
  if (n * sizeof(T) > capacity_) throw std::length_error("all-reduce message exceeds the segment");
  if (ranks_ == 1 || n == 0) return;
  const uint64_t k = ++naive_ops_;
  const int set = static_cast<int>(k & 1), R = ranks_;
  // turn runs from (k-1)R to kR during call k: rank q adds its data when it reaches (k-1)R + q.
  const uint64_t base = (k - 1) * static_cast<uint64_t>(R);
  T* res = reinterpret_cast<T*>(naive_result(set));
  wait_at_least(turn(), base + rank_);
  if (rank_ == 0) {
    std::memcpy(res, data, n * sizeof(T));
  } else {
    for (size_t i = 0; i < n; ++i) from_f32(res[i], to_f32(res[i]) + to_f32(data[i]));
  }
  turn().store(base + rank_ + 1, std::memory_order_release);
  wait_at_least(turn(), base + R);
  std::memcpy(data, res, n * sizeof(T));
}

void ShmAllReduce::all_reduce(float* data, size_t n) {
  reduce(data, n);
}
void ShmAllReduce::all_reduce(bf16_t* data, size_t n) {
  reduce(data, n);
}
void ShmAllReduce::all_reduce_naive(float* data, size_t n) {
  reduce_naive(data, n);
}
void ShmAllReduce::all_reduce_naive(bf16_t* data, size_t n) {
  reduce_naive(data, n);
}

void ShmAllReduce::barrier() {
  const uint64_t target = ++barriers_ * static_cast<uint64_t>(ranks_);
  barrier_count().fetch_add(1, std::memory_order_acq_rel);
  wait_at_least(barrier_count(), target);
}

}  // namespace sandwich::kernels
