#include "engine/runtime/shared_region.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace sandwich::engine {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;

std::string gib(size_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1u << 30));
  return buf;
}
}  // namespace

SharedRegion::SharedRegion(const std::string& name, size_t bytes, Kind kind) {
  size_ = (std::max<size_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage;
  if (kind == Kind::Fork) {
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      throw std::runtime_error("cannot reserve " + gib(bytes) + " of memory for " + name + ": " +
                               std::strerror(errno));
    data_ = static_cast<uint8_t*>(p);
    ::madvise(data_, size_, MADV_HUGEPAGE);
    return;
  }
  fd_ = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd_ < 0)
    throw std::runtime_error("memfd_create failed: " + std::string(std::strerror(errno)));
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    int e = errno;
    release();
    throw std::runtime_error("cannot reserve " + gib(bytes) + " of shared memory for " + name +
                             ": " + std::strerror(e));
  }
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    release();
    throw std::runtime_error("cannot map " + gib(bytes) + " of shared memory for " + name + ": " +
                             std::strerror(e));
  }
  data_ = static_cast<uint8_t*>(p);
  // Huge pages cut TLB misses when decode streams the weights; shmem THP may be disabled by the
  // admin, in which case this is a harmless no-op.
  ::madvise(data_, size_, MADV_HUGEPAGE);
}

SharedRegion SharedRegion::map_fd(int fd, size_t bytes) {
  SharedRegion r;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error("cannot map shared region: " + std::string(std::strerror(errno)));
  r.data_ = static_cast<uint8_t*>(p);
  r.size_ = bytes;
  r.used_ = bytes;
  r.fd_ = ::dup(fd);
  return r;
}

void SharedRegion::release() {
  if (data_) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  fd_ = -1;
  size_ = used_ = 0;
}

SharedRegion::~SharedRegion() {
  release();
}

SharedRegion::SharedRegion(SharedRegion&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      used_(std::exchange(o.used_, 0)),
      fd_(std::exchange(o.fd_, -1)) {}

SharedRegion& SharedRegion::operator=(SharedRegion&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    used_ = std::exchange(o.used_, 0);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void* SharedRegion::allocate(size_t bytes, size_t align) {
  size_t start = (used_ + align - 1) & ~(align - 1);
  if (start > size_ || bytes > size_ - start)
    throw std::runtime_error("shared region full: need " + std::to_string(bytes) + " bytes, " +
                             std::to_string(size_ - std::min(size_, start)) + " left");
  used_ = start + bytes;
  return data_ + start;
}

}  // namespace sandwich::engine
