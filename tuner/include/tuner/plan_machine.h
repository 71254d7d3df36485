#pragma once
// The machine a plan records: this one, with the CPUs its two configurations run on.
#include "engine/plans/schedule_table.h"
#include "topotree/service_config.h"

namespace sandwich::tuner {

MachineFingerprint plan_machine(const topo::ServiceConfig& prefill,
                                const topo::ServiceConfig& decode);

}  // namespace sandwich::tuner
