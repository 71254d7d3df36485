#pragma once
// What a file a flag or a plan names is, and how large it may be: every such file is read with
// these limits (read_bounded_file), so a hostile path (/dev/zero, a FIFO that never ends, a huge
// download) fails with a message instead of filling memory. The limits are far above the real
// files of each kind (README: "Files and their size limits").
#include <cstdint>

namespace sandwich {

struct FileKind {
  const char* name;     // as a message names it: "chat template", "plan"
  std::uint64_t limit;  // bytes
};

namespace file_kinds {

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// Chat templates are KBs, the largest known ~100 KB.
inline constexpr FileKind kChatTemplate{"chat template", 1 * kMiB};
// tokenizer.json reaches ~35 MB (large vocabularies); tiktoken ranks and vocab/merges files less.
inline constexpr FileKind kTokenizer{"tokenizer file", 256 * kMiB};
// config.json, generation_config.json, tokenizer_config.json (which may list every added token),
// model.safetensors.index.json.
inline constexpr FileKind kModelMetadata{"model metadata file", 64 * kMiB};
// Plans and the schedule tables they refer to: MBs.
inline constexpr FileKind kPlan{"plan", 256 * kMiB};
inline constexpr FileKind kScheduleTable{"schedule table", 256 * kMiB};
// The tuner's own inputs: calibration, machine descriptions and parameters, planner state,
// SLO presets.
inline constexpr FileKind kCalibration{"calibration file", 64 * kMiB};
inline constexpr FileKind kMachineDescription{"machine description", 64 * kMiB};
inline constexpr FileKind kMachineParameters{"machine parameters file", 64 * kMiB};
inline constexpr FileKind kPlannerState{"planner state file", 256 * kMiB};
inline constexpr FileKind kSloPreset{"SLO preset file", 64 * kMiB};
// hwloc XML of a machine: KBs to a few MB for the largest servers.
inline constexpr FileKind kTopologyXml{"topology XML", 64 * kMiB};
// (input, output) length pairs: ShareGPT's 84k pairs are ~1 MB.
inline constexpr FileKind kLengthTrace{"length trace", 256 * kMiB};
// A prompt is at most a model's context (~128k tokens, well under 1 MB).
inline constexpr FileKind kPromptFile{"prompt file", 64 * kMiB};
// Text to score: wikitext-103's largest split is ~500 MB.
inline constexpr FileKind kTextToScore{"text file", 1024 * kMiB};

}  // namespace file_kinds
}  // namespace sandwich
