#include "common/huge_page_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace sandwich {

HugePageBuffer::HugePageBuffer(size_t bytes)
    : n_((std::max<size_t>(bytes, 1) + (2u << 20) - 1) / (2u << 20) * (2u << 20)) {
  p_ = mmap(nullptr, n_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p_ == MAP_FAILED) throw std::bad_alloc();
  madvise(p_, n_, MADV_HUGEPAGE);
}

HugePageBuffer::~HugePageBuffer() {
  munmap(p_, n_);
}

}  // namespace sandwich
