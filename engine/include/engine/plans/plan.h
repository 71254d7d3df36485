#pragma once
// A plan: the service configuration of each phase (topotree's ServiceConfig) and the kernel
// table to run them with; and how a thread count given on the command line becomes a
// configuration of one rank.
//
// A plan file is either hand-written, {"prefill": <config>, "decode": <config>,
// "schedules": "table.json"}, or made by `sandwich-tune plan`:
// {"format": "sandwich-plan", "version": 1, "created": "<UTC ISO-8601>", "command": "...",
//  "model": {<ModelIdentity>: shapes, "dtype", "weights", "weights_name", the file},
//  "machine": {<MachineFingerprint>},
//  "prefill": {"config": <config JSON>, "simulated_ms": x, "measured_ms": y},
//  "decode": {...}, "schedules": "plan.schedules.json" or {<a schedule table, inline>},
//  "objective": "...", "details": {...}}
// A configuration is its JSON form, its short form ("2x1") or {"config": ..., ...}.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/formats/model_config.h"
#include "engine/formats/model_shape.h"
#include "engine/plans/schedule_table.h"
#include "topotree/service_config.h"

namespace sandwich::engine {

// What a plan was made for: enough to tell another model from the same one.
struct ModelIdentity {
  std::string name;  // the model's own name (preset or file's)
  std::string architecture = "llama";
  std::string dtype;  // the unquantized matrices' storage: "bf16" or "f32"
  // The weights' storage precisely (Model::weight_storage): "bf16", "f32" or a quantized file's
  // tensors by type, "q4_k x 73, f32 x 25, q6_k x 13"; weights_name names it in messages
  // ("q4_k_m"). Empty in a plan written before they existed: such a plan compares dtype alone.
  std::string weights, weights_name;
  ModelShape shape;
  std::string file;         // the weights' path as given; "" for dummy weights
  int64_t file_bytes = -1;  // size of the file (a folder: its files), -1 when there is none
  int64_t file_mtime = -1;  // seconds since the epoch, -1 when there is none

  // "" when `plan` (what a plan records) describes a model of these shapes and weight storage,
  // else what differs ("n_layers is 32, the plan's 24; the plan was made for bf16 weights, this
  // model is q4_k_m (q4_k x 73, f32 x 25, q6_k x 13)").
  std::string mismatch(const ModelIdentity& plan) const;
  // "" when the weights file is the same by size and mtime (or either has none), else a note.
  std::string file_difference(const ModelIdentity& plan) const;
};
// dtype: "bf16" or "f32"; weights_file: the --model path ("" or a preset name: no file);
// weights and weights_name: Model::weight_storage and weight_storage_name ("": dtype, for
// dummy weights, whose matrices are all of it).
ModelIdentity model_identity(const ModelConfig& config, const std::string& dtype,
                             const std::string& weights_file, const std::string& weights = "",
                             const std::string& weights_name = "");

// The tuner's figures for one phase's chosen configuration (negative: not measured).
struct PhaseFigures {
  double simulated_ms = -1, measured_ms = -1;
};

struct Plan {
  topotree::ServiceConfig prefill, decode;
  std::optional<std::filesystem::path> schedules;  // a tuned-schedule table (schedule_table.h)
  std::optional<ScheduleTable> inline_schedules;   // "schedules": {...} held in the plan itself

  // Written by `sandwich-tune plan`; a hand-written plan has version 0 and none of these.
  int version = 0;
  std::optional<ModelIdentity> model;
  std::optional<MachineFingerprint> machine;
  std::string created, command, objective;
  PhaseFigures prefill_figures, decode_figures;
  std::string details_json;    // the rest the tuner recorded (candidates, stage times), verbatim
  std::filesystem::path file;  // where the plan was read from ("" if not read)
};
inline constexpr int kPlanVersion = 1;

// Throws std::invalid_argument naming the file and the field. Given `config_problems`, a phase
// whose configuration does not parse on this machine is no error: it is left without ranks and
// the reason, naming the file and the phase, is appended there.
Plan load_plan(const std::filesystem::path& file,
               std::vector<std::string>* config_problems = nullptr);
// Writes atomically. `schedules` is written relative to the plan's folder when it lies there or
// below, else as given; inline_schedules, if set, is written in place of a path. Throws
// std::runtime_error.
void write_plan(const Plan& plan, const std::filesystem::path& file);

// The most compute threads a rank may run: 4 x this machine's CPUs. More than that only
// time-slices the spinning thread team until a step takes minutes.
int max_threads();
// A thread-count option (0: all CPUs) as a count; throws std::invalid_argument naming `what`
// (e.g. "--threads") when it is negative or above max_threads().
int resolve_threads(int threads, const std::string& what);
// One rank on the machine's first `threads` CPUs, wrapping around when threads exceed the CPUs
// (threads 0: all of them); throws like resolve_threads.
topotree::ServiceConfig single_rank_config(int threads);

}  // namespace sandwich::engine
