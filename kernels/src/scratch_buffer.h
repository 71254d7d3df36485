#pragma once
// A growable 64-byte-aligned scratch buffer (contents not kept on growth), for the per-thread
// staging of the GEMM drivers (private to kernels/).
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace sandwich::kernels {

class ScratchBuffer {
 public:
  void* get(size_t bytes) {
    if (bytes > size_) {
      ptr_.reset(static_cast<unsigned char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
      if (!ptr_) throw std::bad_alloc();
      size_ = bytes;
    }
    return ptr_.get();
  }

 private:
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> ptr_;
  size_t size_ = 0;
};

}  // namespace sandwich::kernels
