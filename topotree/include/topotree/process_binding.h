#pragma once
// Pinning a rank process where its service configuration puts it.
#include "topotree/service_config.h"

namespace sandwich::topotree {

// Binds the calling process to the rank's CPUs and, on a machine with several NUMA nodes, its
// memory to the rank's node. Best effort: a machine that refuses leaves the process unbound.
void bind_process(const Rank& rank);

}  // namespace sandwich::topotree
