#pragma once
// Where the tools find the project's configs/ folder and the shared reference data, whichever
// module asks: an environment variable first, then the folder this build was made from.
#include <filesystem>

namespace sandwich {

// configs/ (model presets, topologies, SLO presets): $SANDWICH_CONFIGS, else the installed
// share/sandwich/configs beside the running executable's bin/, else the source tree's configs/,
// else configs/ beside the build folder of the running executable.
std::filesystem::path configs_dir();
// The folder holding data/ (traces, reference models, tokenizers): $SANDWICH_SHARED, else the
// shared/ folder beside the source tree.
std::filesystem::path shared_dir();
// This user's cache of the project (calibrations, downloaded models): $XDG_CACHE_HOME/sandwich,
// else ~/.cache/sandwich, else sandwich/ in the temp folder.
std::filesystem::path user_cache_dir();
// shared_dir()/data/traces/sharegpt_lengths.csv: the default request-length trace.
std::filesystem::path default_length_trace();

}  // namespace sandwich
