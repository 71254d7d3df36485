#pragma once
// Reading a file a user or a plan names, never more than its kind's limit (file_kinds.h).
#include <filesystem>
#include <string>

#include "common/file_kinds.h"

namespace sandwich {

// The whole file. Its size is checked before reading and at most limit + 1 bytes are read, so
// neither /dev/zero nor a FIFO that never ends can grow it. Regular files and pipes (a FIFO,
// `<(command)`) are read; directories and devices are refused. Throws std::runtime_error with
// one line naming the kind and the path ("chat template t.jinja: larger than 1 MiB (the limit
// for a chat template)").
std::string read_bounded_file(const std::filesystem::path& p, const FileKind& kind);

// For a file another library reads itself (hwloc's XML): throws as read_bounded_file unless `p`
// is a regular file within the limit.
void check_bounded_file(const std::filesystem::path& p, const FileKind& kind);

}  // namespace sandwich
