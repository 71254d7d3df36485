// The shared-memory all-reduce among real processes (fork), for every size class and type.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/allreduce.h"

namespace sandwich::kernels {
namespace {

// Runs body(rank, allreduce) in `ranks` forked processes; returns how many failed.
int run_ranks(int ranks, size_t capacity, const std::function<bool(int, ShmAllReduce&)>& body) {
  const size_t bytes = ShmAllReduce::region_bytes(ranks, capacity);
  void* region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return ranks;
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      ShmAllReduce ar(region, ranks, r, capacity);
      _exit(body(r, ar) ? 0 : 1);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  munmap(region, bytes);
  return failed;
}

// Multiples of 1/8 below 32: exact in BF16, and their sums exact in FP32, so results can be
// compared bit for bit whatever the compiler does with the loops.
float value(int rank, size_t i, int call) {
  return static_cast<float>(static_cast<int>((i * 37 + rank * 101 + call * 7) % 512) - 256) / 8.0f;
}

template <class T>
bool check_sizes(int rank, ShmAllReduce& ar, int ranks, bool naive, bool in_place = false) {
  int call = 0;
  // One-phase sizes, two-phase sizes, odd sizes and tails, repeated so the slot sets alternate.
  for (size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{16384}, size_t{70001}, size_t{262144},
                   size_t{5}, size_t{100003}}) {
    ++call;
    std::vector<T> storage(in_place ? 0 : n);
    T* d = in_place ? ar.buffer<T>() : storage.data();
    for (size_t i = 0; i < n; ++i) {
      if constexpr (sizeof(T) == 4)
        d[i] = value(rank, i, call);
      else
        d[i] = f32_to_bf16(value(rank, i, call));
    }
    if (naive)
      ar.all_reduce_naive(d, n);
    else
      ar.all_reduce(d, n);
    for (size_t i = 0; i < n; ++i) {
      // The sum in rank order, as every rank computes it.
      float s = 0.0f;
      for (int q = 0; q < ranks; ++q) {
        if constexpr (sizeof(T) == 4)
          s += value(q, i, call);
        else
          s += bf16_to_f32(f32_to_bf16(value(q, i, call)));
      }
      float got;
      if constexpr (sizeof(T) == 4)
        got = d[i];
      else
        got = bf16_to_f32(d[i]);
      const float want = sizeof(T) == 4 ? s : bf16_to_f32(f32_to_bf16(s));
      // The naive BF16 variant rounds after every addition (partial sums reach 128, where a
      // BF16 step is 1); the rest sums in FP32 and rounds once.
      const float tol = sizeof(T) == 2 && naive ? 0.5f * (ranks - 1) : 0.0f;
      if (std::abs(got - want) > tol) {
        std::fprintf(stderr, "rank %d: n %zu, element %zu: got %g, want %g\n", rank, n, i, got,
                     want);
        return false;
      }
    }
  }
  return true;
}

// How many of `ranks` processes fail check_sizes<T> with these options.
template <class T>
int failed_ranks(int ranks, bool naive, bool in_place = false) {
  return run_ranks(ranks, 4 << 20, [=](int r, ShmAllReduce& ar) {
    return check_sizes<T>(r, ar, ranks, naive, in_place);
  });
}

class AllReduceRanks : public ::testing::TestWithParam<int> {};

TEST_P(AllReduceRanks, Fp32SumsExactlyInRankOrder) {
  EXPECT_EQ(failed_ranks<float>(GetParam(), false), 0);
}

TEST_P(AllReduceRanks, Bf16SumsInFp32) {
  EXPECT_EQ(failed_ranks<bf16_t>(GetParam(), false), 0);
}

TEST_P(AllReduceRanks, InPlaceInTheSharedBuffer) {
  EXPECT_EQ(failed_ranks<float>(GetParam(), false, true), 0);
  EXPECT_EQ(failed_ranks<bf16_t>(GetParam(), false, true), 0);
}

TEST_P(AllReduceRanks, NaiveBaselineAgrees) {
  EXPECT_EQ(failed_ranks<float>(GetParam(), true), 0);
  EXPECT_EQ(failed_ranks<bf16_t>(GetParam(), true), 0);
}

TEST_P(AllReduceRanks, MixedCallsAndBarriers) {
  const int R = GetParam();
  EXPECT_EQ(run_ranks(R, 1 << 20,
                      [R](int r, ShmAllReduce& ar) {
                        for (int i = 0; i < 200; ++i) {
                          std::vector<float> d(i % 3 == 0 ? 100000 : 300,
                                               static_cast<float>(r + i));
                          if (i % 5 == 0)
                            ar.all_reduce_naive(d.data(), d.size());
                          else
                            ar.all_reduce(d.data(), d.size());
                          const float want = static_cast<float>(R * i + R * (R - 1) / 2);
                          if (d[0] != want || d.back() != want) return false;
                          ar.barrier();
                        }
                        return true;
                      }),
            0);
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllReduceRanks, ::testing::Values(1, 2, 3, 4));

TEST(AllReduce, RejectsOversizedMessagesAndBadRanks) {
  std::vector<uint8_t> region(ShmAllReduce::region_bytes(2, 1024) + 64);
  void* aligned = region.data() + (64 - reinterpret_cast<uintptr_t>(region.data()) % 64) % 64;
  ShmAllReduce ar(aligned, 2, 0, 1024);
  std::vector<float> big(1000);
  EXPECT_THROW(ar.all_reduce(big.data(), big.size()), std::length_error);
  EXPECT_THROW(ShmAllReduce(aligned, 2, 2, 1024), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::kernels
