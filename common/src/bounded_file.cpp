#include "common/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace sandwich {
namespace {

std::string where(const std::filesystem::path& p, const FileKind& kind) {
  return std::string(kind.name) + " " + p.string();
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= file_kinds::kMiB && bytes % file_kinds::kMiB == 0)
    return std::to_string(bytes / file_kinds::kMiB) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " bytes";
}

[[noreturn]] void too_large(const std::filesystem::path& p, const FileKind& kind) {
  throw std::runtime_error(where(p, kind) + ": larger than " + size_text(kind.limit) +
                           " (the limit for a " + kind.name + ")");
}

// Why a file of this type cannot be read as a whole, or null when it can.
const char* refused_type(mode_t mode, bool pipes_allowed) {
  if (S_ISREG(mode) || (pipes_allowed && S_ISFIFO(mode))) return nullptr;
  if (S_ISDIR(mode)) return "a directory, not a file";
  if (S_ISCHR(mode)) return "a character device, not a file";
  if (S_ISBLK(mode)) return "a block device, not a file";
  if (S_ISSOCK(mode)) return "a socket, not a file";
  if (S_ISFIFO(mode)) return "a pipe, not a regular file";
  return "not a regular file";
}

struct stat stat_or_throw(const std::filesystem::path& p, const FileKind& kind) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) {
    const int e = errno;
    throw std::runtime_error(where(p, kind) + ": " +
                             (e == ENOENT ? "no such file" : std::strerror(e)));
  }
  return st;
}

void check_type_and_size(const struct stat& st, const std::filesystem::path& p,
                         const FileKind& kind, bool pipes_allowed) {
  if (const char* why = refused_type(st.st_mode, pipes_allowed))
    throw std::runtime_error(where(p, kind) + ": " + why);
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > kind.limit)
    too_large(p, kind);
}

}  // namespace

std::string read_bounded_file(const std::filesystem::path& p, const FileKind& kind) {
  // The type is known before open(): a device must not be opened at all, and a regular file is
  // opened non-blocking so that one swapped for a FIFO in between cannot block here. A FIFO is
  // opened blocking, as cat does: it waits for its writer (SIGTERM still stops the program).
  const struct stat before = stat_or_throw(p, kind);
  check_type_and_size(before, p, kind, true);
  const bool fifo = S_ISFIFO(before.st_mode);
  int fd;
  while ((fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | (fifo ? 0 : O_NONBLOCK))) < 0 &&
         errno == EINTR) {
  }
  if (fd < 0) {
    const int e = errno;
    throw std::runtime_error(where(p, kind) + ": cannot open (" + std::strerror(e) + ")");
  }
  std::string text;
  try {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int e = errno;
      throw std::runtime_error(where(p, kind) + ": " + std::strerror(e));
    }
    check_type_and_size(st, p, kind, fifo);
    if (S_ISREG(st.st_mode)) text.reserve(static_cast<size_t>(st.st_size));
    // At most limit + 1 bytes: one more than allowed says the file is too large, whatever
    // fstat said (a file growing, a /proc file whose size reads 0).
    char buf[1 << 16];
    for (;;) {
      const std::uint64_t want = std::min<std::uint64_t>(sizeof buf, kind.limit + 1 - text.size());
      const ssize_t n = ::read(fd, buf, static_cast<size_t>(want));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int e = errno;
        throw std::runtime_error(where(p, kind) + ": cannot read (" + std::strerror(e) + ")");
      }
      if (n == 0) break;
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > kind.limit) too_large(p, kind);
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

void check_bounded_file(const std::filesystem::path& p, const FileKind& kind) {
  check_type_and_size(stat_or_throw(p, kind), p, kind, false);
}

}  // namespace sandwich
