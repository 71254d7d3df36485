#pragma once
// A block of memory backed by a memfd, so that rank processes of a tensor-parallel group can map
// the same weights and KV cache. Bump-allocated in 64-byte aligned pieces.
#include <cstddef>
#include <cstdint>
#include <string>

namespace sandwich {

class SharedRegion {
 public:
  SharedRegion() = default;
  // Creates a region of `bytes` (rounded up to whole 2 MiB pages, with transparent huge pages
  // requested). Throws std::runtime_error if the memory cannot be had.
  SharedRegion(const std::string& name, size_t bytes);
  // Maps an existing region from a memfd received from another process.
  static SharedRegion map_fd(int fd, size_t bytes);
  ~SharedRegion();
  SharedRegion(SharedRegion&& o) noexcept;
  SharedRegion& operator=(SharedRegion&& o) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }
  size_t used() const { return used_; }

  // Next `bytes` of the region, aligned to `align` (power of two); throws when full.
  void* allocate(size_t bytes, size_t align = 64);
  // Offset of a pointer inside the region (for publishing to other processes).
  size_t offset_of(const void* p) const { return static_cast<size_t>(static_cast<const uint8_t*>(p) - data_); }

 private:
  void release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
  int fd_ = -1;
};

}  // namespace sandwich
