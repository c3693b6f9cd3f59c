#!/usr/bin/env bash
# check-pipes.sh fails on a pipe into a reader that may stop before the
# writer is done (grep -q/-m/-l, head) in the gate's scripts: under
# `set -o pipefail` the writer then dies of EPIPE (curl's exit 23, a 141)
# and fails the run whenever the reader wins the race. Capture, then match:
#   out=$(curl -fsS "$url") || fail ...; grep -q pattern <<<"$out"
set -euo pipefail
cd "$(dirname "$0")/.."
files=(Makefile .ci/run scripts/*.sh)
# The pattern is assembled from parts so this file does not match itself.
bar='\|' early_grep='grep([[:space:]]+-[a-zA-Z]+)*[[:space:]]+-[a-zA-Z]*[qml]' early_head='head\b'
re="(^|[^|])${bar}[[:space:]]*(${early_grep}|${early_head})"
hits=$(grep -nE -- "$re" "${files[@]}" || true)
if [ -n "$hits" ]; then
  printf 'check-pipes: a pipe into grep -q/-m/-l or head fails under pipefail when the reader stops first; capture the output, then match it:\n%s\n' "$hits" >&2
  exit 1
fi
