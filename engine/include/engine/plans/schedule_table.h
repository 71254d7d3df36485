#pragma once
// The tuned-schedule table file (JSON): one per machine + model + service configuration,
// written by `sandwich-tune kernels`, read by sandwich-generate, sandwich-bench engine and
// sandwichd (--schedules FILE, or "schedules" in a plan), checked and installed as
// checked_schedule_table.h says. Strings, not kernel types: the engine's public headers stay
// kernels-free.
//
// {"format": "sandwich-schedules", "version": 1,
//  "machine": {"cpu": "AMD EPYC 9R14", "isa": "avx512bf16", "cores": "0-1",
//              "l1d_bytes": 32768, "l2_bytes": 1048576, "l3_bytes": 33554432,
//              "kernels": "<kernels_version()>"},
//  "model": "llama-1.3b", "config": "1x2",
//  "gemms": [{"n": 2048, "k": 2048, "dtype": "bf16", "threads": 2, "pair": false,   // or "q4_k"
//             "ranges": [{"m": [1, 1], "schedule": "avx512bf16 1x64 slice 1x64x2048 threads 1x2x1",
//                         "gflops": 41.2, "how": "searched"}, ...]}, ...],
//  "tunables": [{"kernel": "attention_decode", "key": {"head_dim": 128, ...},
//                "ranges": [{"m": [1, 64], "params": {"kv_blocks": 4}, "how": "searched"}]}],
//  "resume": {...}}   // the tuner's own state, kept for --resume
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace sandwich::engine {

struct MachineFingerprint {
  std::string cpu;    // kernels::cpu_identity().model: /proc/cpuinfo "model name"
  std::string isa;    // the GEMM's ISA for BF16 weights
  std::string cores;  // CPU list the tuning ran on ("0-1"): informative, not compared
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  std::string kernels;  // kernels::kernels_version()

  // Empty when `other` is this same machine (cores aside), else what differs, e.g.
  // "cpu is \"Intel Xeon ...\", the table's \"AMD EPYC ...\"" (`whose`: "the table's").
  std::string mismatch(const MachineFingerprint& table,
                       const std::string& whose = "the table's") const;
};
// This machine's fingerprint; `cores` is the CPU list to record.
MachineFingerprint this_machine_fingerprint(const std::string& cores = "");
nlohmann::json machine_fingerprint_to_json(const MachineFingerprint& f);
// Throws std::invalid_argument prefixed by `origin` (a file's name).
MachineFingerprint machine_fingerprint_from_json(const nlohmann::json& j,
                                                 const std::string& origin);

struct TunedGemmRange {
  int64_t m_lo = 1, m_hi = 1;
  std::string schedule;  // kernels::Schedule::to_string form
  double gflops = 0;     // measured (0: derived without a measurement)
  std::string how;       // "searched", "window", "reused", "derived"
};
struct TunedGemm {
  int64_t n = 0, k = 0;
  // The weight matrix's type: "f32", "bf16" or a quantized block type ("q4_k", "q6_k", ...): a
  // quantized model's GEMMs are keyed by their own matrix's type. (Tables written before
  // quantized keys existed hold only "f32" and "bf16", and read as they always did.)
  std::string dtype = "bf16";
  int threads = 1;
  bool pair = false;
  std::vector<TunedGemmRange> ranges;
};
struct TunedKernelRange {
  int64_t m_lo = 1, m_hi = 1;
  std::map<std::string, int64_t> params;
  double seconds = 0;
  std::string how;
};
// A hand-written tunable kernel's parameters (attention block sizes), by kernel and shape key.
struct TunedKernel {
  std::string kernel;                  // e.g. "attention_prefill", "attention_decode"
  std::map<std::string, int64_t> key;  // e.g. head_dim, group, threads
  std::vector<TunedKernelRange> ranges;
};

struct ScheduleTable {
  MachineFingerprint machine;
  std::string model, config;
  std::vector<TunedGemm> gemms;
  std::vector<TunedKernel> tunables;
  std::string resume_json;  // the tuner's "resume" object as JSON text ("" if none)
};

// Throws std::invalid_argument naming the file and what is wrong (not JSON, wrong format or
// version, a field of the wrong type). Schedules are not validated here.
ScheduleTable read_schedule_table(const std::filesystem::path& file);
// Writes atomically (a temporary file renamed over `file`); throws std::runtime_error.
void write_schedule_table(const ScheduleTable& table, const std::filesystem::path& file);
// The same as JSON: `origin` names the table in errors (a file, or "plan.json: schedules").
ScheduleTable schedule_table_from_json(const nlohmann::json& j, const std::string& origin);
nlohmann::json schedule_table_to_json(const ScheduleTable& table);

}  // namespace sandwich::engine
