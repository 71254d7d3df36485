#!/usr/bin/env bash
# Checks that every C++ source of the project is formatted as .clang-format says.
# Usage: scripts/check_format.sh [--fix]   (--fix rewrites the files instead)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format not found; skipped" >&2; exit 77; }
mapfile -t files < <(find common kernels topotree engine tuner server bench apps tests \
  -path '*/node_modules' -prune -o -type f \( -name '*.cpp' -o -name '*.h' \) -print | sort)
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
report=$(mktemp)
trap 'rm -f "$report"' EXIT
if ! clang-format --dry-run --Werror "${files[@]}" 2>"$report"; then
  grep -E '^[^ ].*: error:' "$report" | sed -E 's/:[0-9]+:[0-9]+: error:.*//' | sort -u |
    sed 's/^/check_format: not formatted: /' >&2
  echo "check_format: run scripts/check_format.sh --fix" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
