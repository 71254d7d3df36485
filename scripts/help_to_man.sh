#!/bin/sh
# A man page from a tool's --help: help_to_man.sh BINARY NAME VERSION SUMMARY OUT.
# The help text goes in as it is (no-fill), after roff headers; a tool made of commands
# ("sandwich-model make ...") gets a section for each command's --help too. Our own few lines
# instead of help2man, so that building needs nothing more.
set -eu
bin=$1 name=$2 version=$3 summary=$4 out=$5

# Backslashes and lines that roff would read as requests are escaped.
roff_text() {
  sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
}

mkdir -p "$(dirname "$out")"
help=$("$bin" --help)
upper=$(printf '%s' "$name" | tr '[:lower:]-' '[:upper:]_')
{
  printf '.TH %s 1 "" "sandwich %s" "User Commands"\n' "$upper" "$version"
  printf '.SH NAME\n%s \\- %s\n' "$name" "$summary"
  printf '.SH DESCRIPTION\n.nf\n'
  printf '%s\n' "$help" | roff_text
  printf '.fi\n'
  # Commands: the first word of each line indented by two spaces under "commands:".
  printf '%s\n' "$help" | awk '/^commands:/ {on = 1; next} on && /^[^ ]/ {on = 0}
                               on && /^  [a-z]/ {print $1}' |
    while read -r cmd; do
      sub=$("$bin" "$cmd" --help 2>/dev/null) || continue
      printf '.SH "COMMAND: %s"\n.nf\n' "$cmd"
      printf '%s\n' "$sub" | roff_text
      printf '.fi\n'
    done
  printf '.SH VERSION\n%s\n' "$("$bin" --version | roff_text)"
  printf '.SH SEE ALSO\nThe README of the Sandwich project.\n'
} >"$out.tmp"
mv "$out.tmp" "$out"
