#pragma once
// Anonymous memory in whole 2 MiB pages, advised to use transparent huge pages, as the engine's
// weight region is: what streams weights in a benchmark or the tuner's profiler should pay the
// same TLB costs as the engine.
#include <cstddef>

namespace sandwich {

class HugePageBuffer {
 public:
  // Throws std::bad_alloc when the mapping fails.
  explicit HugePageBuffer(size_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  void* get() const { return p_; }
  size_t size() const { return n_; }

 private:
  size_t n_;
  void* p_;
};

}  // namespace sandwich
