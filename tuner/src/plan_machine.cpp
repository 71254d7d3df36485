#include "tuner/plan_machine.h"

#include <algorithm>
#include <vector>

#include "common/cpu_list.h"

namespace sandwich::tuner {

engine::MachineFingerprint plan_machine(const topotree::ServiceConfig& prefill,
                                        const topotree::ServiceConfig& decode) {
  std::vector<int> cpus;
  for (const auto* c : {&prefill, &decode})
    for (const auto& r : c->ranks) cpus.insert(cpus.end(), r.cpus.begin(), r.cpus.end());
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return engine::this_machine_fingerprint(format_cpu_list(cpus));
}

}  // namespace sandwich::tuner
