#pragma once
// The machine a plan records: this one, with the CPUs its two configurations run on.
#include "engine/plans/schedule_table.h"
#include "topotree/service_config.h"

namespace sandwich::tuner {

engine::MachineFingerprint plan_machine(const topotree::ServiceConfig& prefill,
                                        const topotree::ServiceConfig& decode);

}  // namespace sandwich::tuner
