#pragma once
// `sandwich-tune plan` (plan_command.cpp).
#include "common/tool.h"

namespace sandwich::tuner {
extern const Subcommand kPlanCommand;
}  // namespace sandwich::tuner
