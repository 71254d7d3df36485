#include "topotree/process_binding.h"

#include <hwloc.h>

namespace sandwich::topotree {

void bind_process(const Rank& rank) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return;
  if (hwloc_topology_load(topo) == 0) {
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    for (int c : rank.cpus) hwloc_bitmap_set(cpus, static_cast<unsigned>(c));
    hwloc_set_cpubind(topo, cpus, HWLOC_CPUBIND_PROCESS);
    hwloc_bitmap_free(cpus);
    if (hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE) > 1) {
      hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
      hwloc_bitmap_set(nodes, static_cast<unsigned>(rank.memory_node()));
      hwloc_set_membind(topo, nodes, HWLOC_MEMBIND_BIND,
                        HWLOC_MEMBIND_PROCESS | HWLOC_MEMBIND_BYNODESET);
      hwloc_bitmap_free(nodes);
    }
  }
  hwloc_topology_destroy(topo);
}

}  // namespace sandwich::topotree
