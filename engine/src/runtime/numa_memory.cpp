#include "runtime/numa_memory.h"

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sandwich::engine {
namespace {

constexpr unsigned long kMaskBits = 64;

std::string error_of(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

void bind_to_node(void* addr, size_t bytes, int node, bool move) {
  if (node < 0 || node >= static_cast<int>(kMaskBits))
    throw std::runtime_error("NUMA node " + std::to_string(node) + " is out of range (0-63)");
  const unsigned long mask = 1ul << node;
  const unsigned flags = move ? MPOL_MF_MOVE : 0;
  // maxnode counts one past the highest bit the kernel reads.
  if (syscall(SYS_mbind, addr, bytes, MPOL_BIND, &mask, kMaskBits + 1, flags) != 0)
    throw std::runtime_error(error_of(("mbind to NUMA node " + std::to_string(node)).c_str()));
}

PagePolicy page_policy(const void* addr) {
  int mode = 0;
  unsigned long mask[16] = {};  // the kernel writes as many bits as it has nodes, up to 1024
  if (syscall(SYS_get_mempolicy, &mode, mask, 1024ul, addr, MPOL_F_ADDR) != 0)
    throw std::runtime_error(error_of("get_mempolicy"));
  return {mode, mask[0]};
}

int page_node(const void* addr) {
  int node = -1;
  if (syscall(SYS_get_mempolicy, &node, nullptr, 0ul, addr, MPOL_F_NODE | MPOL_F_ADDR) != 0)
    throw std::runtime_error(error_of("get_mempolicy"));
  return node;
}

bool node_allowed(int node) {
  if (node < 0 || node >= static_cast<int>(kMaskBits)) return false;
  unsigned long mask[16] = {};
  if (syscall(SYS_get_mempolicy, nullptr, mask, 1024ul, nullptr, MPOL_F_MEMS_ALLOWED) != 0)
    return false;
  return (mask[0] >> node) & 1;
}

}  // namespace sandwich::engine
