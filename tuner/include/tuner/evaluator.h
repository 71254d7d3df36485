#pragma once
// Ranking service configurations: an evaluator predicts (or measures) the latency of a sampled
// request trace under a configuration. The search only sees this interface, so a simulator and
// a measurement on the real engine are interchangeable.
#include <limits>
#include <string>

#include "topotree/service_config.h"

namespace sandwich::tuner {

enum class Phase { Prefill, Decode };
const char* phase_name(Phase p);  // "prefill" / "decode"

struct Prediction {
  // The phase's figure of merit, lower is better: mean prefill latency of a trace request (ms),
  // or the time of one decode step of the trace's batch, i.e. time per output token (ms).
  double ms = std::numeric_limits<double>::infinity();
  // Where the time goes (simulator only; zero otherwise), summed over the phase's steps.
  double compute_ms = 0, memory_ms = 0, communication_ms = 0, sync_ms = 0;
};

class ConfigEvaluator {
 public:
  virtual ~ConfigEvaluator() = default;
  virtual std::string name() const = 0;
  virtual Prediction evaluate(const topotree::ServiceConfig& config, Phase phase) = 0;
  // Cheap enough to also fill in the other phase's figure for display.
  virtual bool cheap() const { return false; }
};

}  // namespace sandwich::tuner
