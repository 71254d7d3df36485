#!/bin/sh
# cmake --install into a temporary prefix, then the installed tools run from there: each prints
# its version and has a man page, and configs/ is found in PREFIX/share/sandwich/configs (a
# topology only the installed copy holds). install_test.sh BUILD_DIR
set -eu
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() {
  echo "install test: $*" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" >/dev/null
for tool in sandwichd sandwich-generate sandwich-model sandwich-perplexity sandwich-tune sandwich-bench; do
  [ -x "$prefix/bin/$tool" ] || fail "no $prefix/bin/$tool"
  v=$("$prefix/bin/$tool" --version) || fail "$tool --version failed"
  case $v in "$tool "[0-9]*" (git "*" build)") ;; *) fail "$tool --version printed '$v'" ;; esac
  page=$prefix/share/man/man1/$tool.1
  [ -s "$page" ] || fail "no man page $page"
  grep -q '^\.TH ' "$page" || fail "$page has no .TH header"
  grep -q -e '--version' "$page" || fail "$page lacks the help text"
done
grep -q '^\.SH "COMMAND: make"' "$prefix/share/man/man1/sandwich-model.1" ||
  fail "sandwich-model.1 lacks its commands"
"$prefix/bin/sandwich-bench" engine --version >/dev/null || fail "sandwich-bench engine is missing"

configs=$prefix/share/sandwich/configs
[ -f "$configs/models/llama-160m.json" ] || fail "no configs in $configs"
cp "$configs/topologies/xeon-gold-6151-2s.json" "$configs/topologies/installed-only.json"
env -u SANDWICH_CONFIGS "$prefix/bin/sandwich-tune" topology --topology installed-only >/dev/null ||
  fail "sandwich-tune did not find a topology in the installed configs"
echo "installed and ran from $prefix"
