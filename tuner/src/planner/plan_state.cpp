#include "tuner/planner/plan_state.h"

#include <algorithm>
#include <stdexcept>

namespace sandwich::tuner {

using json = nlohmann::json;

std::string short_config(const topotree::ServiceConfig& c) {
  return c.to_string(8);
}

json PlanCandidate::to_json() const {
  json j = {{"config", config.to_json()},
            {"short", short_config(config)},
            {"simulated_ms", simulated_ms}};
  if (simulated_decode_1_ms > 0) j["simulated_decode_1_ms"] = simulated_decode_1_ms;
  if (measured_ms) j["measured_ms"] = *measured_ms;
  if (measured_decode_1_ms) j["measured_decode_1_ms"] = *measured_decode_1_ms;
  if (!kernels.empty()) j["kernels"] = kernels;
  if (tuned_ms) j["tuned_ms"] = *tuned_ms;
  if (tuned_decode_1_ms) j["tuned_decode_1_ms"] = *tuned_decode_1_ms;
  return j;
}

PlanCandidate PlanCandidate::from_json(const json& j) {
  PlanCandidate c{topotree::service_config_from_json(j.at("config")),
                  j.at("simulated_ms").get<double>()};
  c.simulated_decode_1_ms = j.value("simulated_decode_1_ms", 0.0);
  if (j.contains("measured_ms")) c.measured_ms = j["measured_ms"].get<double>();
  if (j.contains("measured_decode_1_ms"))
    c.measured_decode_1_ms = j["measured_decode_1_ms"].get<double>();
  c.kernels = j.value("kernels", "");
  if (j.contains("tuned_ms")) c.tuned_ms = j["tuned_ms"].get<double>();
  if (j.contains("tuned_decode_1_ms")) c.tuned_decode_1_ms = j["tuned_decode_1_ms"].get<double>();
  return c;
}

bool PlanState::has(const std::string& stage) const {
  return std::find(done.begin(), done.end(), stage) != done.end();
}

double PlanState::spent() const {
  double s = 0;
  for (const auto& [_, v] : seconds) s += v;
  return s;
}

json PlanState::to_json() const {
  json p = json::array(), d = json::array(), t = json::array();
  for (const auto& c : prefill) p.push_back(c.to_json());
  for (const auto& c : decode) d.push_back(c.to_json());
  for (const auto& r : trace) t.push_back({r.input, r.output});
  return {{"format", "sandwich-plan-state"},
          {"options", options},
          {"done", done},
          {"seconds", seconds},
          {"load_seconds", load_seconds},
          {"prefill", p},
          {"decode", d},
          {"trace", t},
          {"trace_source", trace_source},
          {"params_source", params_source},
          {"prefill_samples", prefill_samples},
          {"cuts", cuts},
          {"choice", choice},
          {"cost_model_choice", cost_model_choice},
          {"kernel_report", kernel_report},
          {"kernels_started", kernels_started},
          {"kernel_cap", kernel_cap}};
}

PlanState PlanState::from_json(const json& j) {
  if (j.value("format", "") != "sandwich-plan-state")
    throw std::invalid_argument("not a plan state");
  PlanState s;
  s.options = j.at("options");
  s.done = j.at("done").get<std::vector<std::string>>();
  s.seconds = j.at("seconds").get<std::map<std::string, double>>();
  s.load_seconds = j.at("load_seconds").get<double>();
  for (const auto& c : j.at("prefill")) s.prefill.push_back(PlanCandidate::from_json(c));
  for (const auto& c : j.at("decode")) s.decode.push_back(PlanCandidate::from_json(c));
  for (const auto& r : j.at("trace")) s.trace.push_back({r.at(0).get<int>(), r.at(1).get<int>()});
  s.trace_source = j.at("trace_source").get<std::string>();
  s.params_source = j.at("params_source").get<std::string>();
  s.prefill_samples = j.at("prefill_samples").get<int>();
  s.cuts = j.at("cuts").get<std::vector<std::string>>();
  s.choice = j.at("choice");
  s.cost_model_choice = j.at("cost_model_choice");
  s.kernel_report = j.at("kernel_report");
  s.kernels_started = j.at("kernels_started").get<bool>();
  s.kernel_cap = j.at("kernel_cap").get<int64_t>();
  return s;
}

}  // namespace sandwich::tuner
