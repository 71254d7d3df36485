#pragma once
// What a binary is: the project's version (CMake's project()), the git commit it was configured
// from, and the instruction set it was compiled for.
#include <string>
#include <string_view>

namespace sandwich {

const char* project_version();  // e.g. "0.1.0"
const char* git_commit();       // short hash, or "unknown" when built outside git
const char* build_isa();        // e.g. "AVX-512 BF16"
// "<program> 0.1.0 (git 1a2b3c4, AVX-512 BF16 build)": what --version prints.
std::string version_line(std::string_view program);

}  // namespace sandwich
