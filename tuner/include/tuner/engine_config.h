#pragma once
// A searched configuration in the engine's form (what plans and `--config` take).
#include <nlohmann/json_fwd.hpp>

#include "engine/service_config.h"
#include "topotree/service_config.h"

namespace sandwich::tuner {

// A rank spanning NUMA nodes gets the first of them as its node (the engine binds memory to
// one node); config_json also lists all of them as "numa_nodes".
ServiceConfig to_engine_config(const topo::ServiceConfig& c);
// {"ranks": [{"numa": N, "cpus": [...]} ...]}, readable by service_config_from_json.
nlohmann::json config_json(const topo::ServiceConfig& c);

}  // namespace sandwich::tuner
