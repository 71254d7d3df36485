#pragma once
// NUMA memory policy of address ranges: mbind(2) and get_mempolicy(2) through syscall(), so the
// engine needs no libnuma.
#include <cstddef>
#include <cstdint>

namespace sandwich::engine {

// Binds [addr, addr + bytes) to NUMA node `node` (MPOL_BIND): pages faulted from now on come
// from it; with `move`, pages already there move to it (best effort: pages shared with another
// process stay). addr must be page-aligned. Throws std::runtime_error with the reason.
void bind_to_node(void* addr, size_t bytes, int node, bool move);

// The policy of the page at addr (get_mempolicy with MPOL_F_ADDR): its mode (MPOL_DEFAULT,
// MPOL_BIND, ... of <linux/mempolicy.h>) and its node mask (nodes 0..63).
struct PagePolicy {
  int mode = 0;
  uint64_t nodes = 0;
};
PagePolicy page_policy(const void* addr);

// The node holding the page at addr (faulted in if it was not): get_mempolicy with MPOL_F_NODE |
// MPOL_F_ADDR.
int page_node(const void* addr);

// Whether this process may place memory on `node` (its allowed memory nodes).
bool node_allowed(int node);

}  // namespace sandwich::engine
