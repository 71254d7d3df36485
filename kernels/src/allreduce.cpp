#include "kernels/allreduce.h"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include <immintrin.h>

namespace sandwich::kernels {
namespace {

constexpr size_t kLine = 64;

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// Spins on a flag shared with other processes; yields once it has spun for a while so an
// oversubscribed machine still makes progress.
inline void wait_at_least(const std::atomic<uint64_t>& f, uint64_t v) {
  for (int i = 0; f.load(std::memory_order_acquire) < v; ++i) {
    if (i < 4096) _mm_pause();
    else sched_yield();
  }
}

inline float to_f32(float v) { return v; }
inline float to_f32(bf16_t v) { return bf16_to_f32(v); }
inline void from_f32(float& d, float v) { d = v; }
inline void from_f32(bf16_t& d, float v) { d = f32_to_bf16(v); }

// Chunk c of n elements split into `parts`, in multiples of a cache line of T.
template <class T>
std::pair<size_t, size_t> chunk(size_t n, int parts, int c) {
  const size_t per_line = kLine / sizeof(T);
  const size_t lines = (n + per_line - 1) / per_line;
  const size_t b = std::min(n, lines * c / parts * per_line), e = std::min(n, lines * (c + 1) / parts * per_line);
  return {b, e};
}

}  // namespace

size_t ShmAllReduce::region_bytes(int ranks, size_t capacity_bytes) {
  const size_t cap = round_up(capacity_bytes, kLine);
  return flag_count(ranks) * kLine + 2 * static_cast<size_t>(ranks) * cap + 2 * cap;
}

ShmAllReduce::ShmAllReduce(void* region, int ranks, int rank, size_t capacity_bytes)
    : base_(static_cast<uint8_t*>(region)), ranks_(ranks), rank_(rank), capacity_(round_up(capacity_bytes, kLine)) {
  if (ranks < 1 || rank < 0 || rank >= ranks) throw std::invalid_argument("all-reduce: invalid rank " + std::to_string(rank));
  if (reinterpret_cast<uintptr_t>(region) % kLine) throw std::invalid_argument("all-reduce: region must be 64-byte aligned");
}

std::atomic<uint64_t>& ShmAllReduce::flag(size_t index) const {
  return *reinterpret_cast<std::atomic<uint64_t>*>(base_ + index * kLine);
}

uint8_t* ShmAllReduce::slot(int set, int r) const {
  return base_ + flag_count(ranks_) * kLine + (static_cast<size_t>(set) * ranks_ + r) * capacity_;
}

uint8_t* ShmAllReduce::result(int set) const {
  return base_ + flag_count(ranks_) * kLine + 2 * static_cast<size_t>(ranks_) * capacity_ + set * capacity_;
}

template <class T>
void ShmAllReduce::reduce(T* data, size_t n) {
  if (n * sizeof(T) > capacity_)
    throw std::length_error("all-reduce of " + std::to_string(n * sizeof(T)) + " bytes exceeds the segment's " +
                            std::to_string(capacity_));
  if (ranks_ == 1 || n == 0) return;
  const uint64_t k = ++op_;
  const int set = static_cast<int>(k & 1), R = ranks_, r = rank_;
  auto src = [&](int q) { return reinterpret_cast<const T*>(slot(set, q)); };
  auto sum_range = [&](size_t b, size_t e, T* out) {
    for (size_t i = b; i < e; ++i) {
      float s = 0.0f;
      for (int q = 0; q < R; ++q) s += to_f32(src(q)[i]);
      from_f32(out[i], s);
    }
  };
  T* mine = reinterpret_cast<T*>(slot(set, r));
  if (n * sizeof(T) <= kOnePhaseBytes) {
    std::memcpy(mine, data, n * sizeof(T));
    ready(r).store(k, std::memory_order_release);
    for (int q = 0; q < R; ++q) wait_at_least(ready(q), k);
    for (int i = 0; i < R; ++i) {
      const auto [b, e] = chunk<T>(n, R, (r + i) % R);
      sum_range(b, e, data);
    }
    return;
  }
  // Reduce-scatter: publish the chunks others own first, in an order shifted by rank.
  for (int i = 1; i <= R; ++i) {
    const int c = (r + i) % R;
    const auto [b, e] = chunk<T>(n, R, c);
    std::memcpy(mine + b, data + b, (e - b) * sizeof(T));
    chunk_ready(r, c).store(k, std::memory_order_release);
  }
  {
    const auto [b, e] = chunk<T>(n, R, r);
    for (int i = 0; i < R; ++i) wait_at_least(chunk_ready((r + i) % R, r), k);
    T* res = reinterpret_cast<T*>(result(set));
    sum_range(b, e, res);
    std::memcpy(data + b, res + b, (e - b) * sizeof(T));
    reduced(r).store(k, std::memory_order_release);
  }
  // All-gather, starting with the chunk after this rank's.
  for (int i = 1; i < R; ++i) {
    const int c = (r + i) % R;
    const auto [b, e] = chunk<T>(n, R, c);
    wait_at_least(reduced(c), k);
    std::memcpy(data + b, reinterpret_cast<const T*>(result(set)) + b, (e - b) * sizeof(T));
  }
}

template <class T>
void ShmAllReduce::reduce_naive(T* data, size_t n) {
  if (n * sizeof(T) > capacity_) throw std::length_error("all-reduce message exceeds the segment");
  if (ranks_ == 1 || n == 0) return;
  const uint64_t k = ++naive_ops_;
  const int set = static_cast<int>(k & 1), R = ranks_;
  // turn runs from (k-1)R to kR during call k: rank q adds its data when it reaches (k-1)R + q.
  const uint64_t base = (k - 1) * static_cast<uint64_t>(R);
  T* res = reinterpret_cast<T*>(result(set));
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

void ShmAllReduce::all_reduce(float* data, size_t n) { reduce(data, n); }
void ShmAllReduce::all_reduce(bf16_t* data, size_t n) { reduce(data, n); }
void ShmAllReduce::all_reduce_naive(float* data, size_t n) { reduce_naive(data, n); }
void ShmAllReduce::all_reduce_naive(bf16_t* data, size_t n) { reduce_naive(data, n); }

void ShmAllReduce::barrier() {
  const uint64_t target = ++barriers_ * static_cast<uint64_t>(ranks_);
  barrier_count().fetch_add(1, std::memory_order_acq_rel);
  wait_at_least(barrier_count(), target);
}

}  // namespace sandwich::kernels
