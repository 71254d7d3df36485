#pragma once
// Memory that the rank processes of a tensor-parallel group share, bump-allocated in aligned
// pieces. Two kinds:
//  - Fd: a memfd mapped MAP_SHARED; any process that receives the fd maps the same pages and
//    writes are seen by all (the KV cache).
//  - Fork: anonymous memory with transparent huge pages, shared with rank processes forked
//    after it is filled (read-only data: the weights). Kernels commonly disable huge pages for
//    shared memory (shmem_enabled = never, as on this project's machines), and 4 KiB pages cost
//    the weight stream TLB misses: measured on llama3-8b BF16, loading took 49 s instead of
//    14 s and prefill ran 12% slower with the memfd.
#include <cstddef>
#include <cstdint>
#include <string>

namespace sandwich::engine {

class SharedRegion {
 public:
  enum class Kind { Fd, Fork };
  SharedRegion() = default;
  // Creates a region of `bytes` (rounded up to whole 2 MiB pages, with transparent huge pages
  // requested). Throws std::runtime_error if the memory cannot be had.
  SharedRegion(const std::string& name, size_t bytes, Kind kind = Kind::Fd);
  // Maps an existing region from a memfd received from another process.
  static SharedRegion map_fd(int fd, size_t bytes);
  ~SharedRegion();
  SharedRegion(SharedRegion&& o) noexcept;
  SharedRegion& operator=(SharedRegion&& o) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }  // -1 for Kind::Fork
  Kind kind() const { return fd_ >= 0 ? Kind::Fd : Kind::Fork; }
  size_t used() const { return used_; }

  // Next `bytes` of the region, aligned to `align` (power of two); throws when full.
  void* allocate(size_t bytes, size_t align = 64);
  // Offset of a pointer inside the region (for publishing to other processes).
  size_t offset_of(const void* p) const {
    return static_cast<size_t>(static_cast<const uint8_t*>(p) - data_);
  }

 private:
  void release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
  int fd_ = -1;
};

}  // namespace sandwich::engine
