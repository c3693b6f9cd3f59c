#!/usr/bin/env bash
# Proves scripts/deps-update.sh (make deps-update) on a scratch repository
# whose one direct dependency is old (golang.org/x/text v0.3.6, the module
# check-vulnscan.sh plants) and one indirect dependency must never be
# proposed. Needs the Go module proxy only.
#   1. -dry-run proposes x/text v0.3.6 -> the newest v0 release, writes the
#      report, and changes nothing;
#   2. a run with a passing gate applies the proposal in a scratch worktree,
#      passes, scans, writes the patch, and leaves the repository untouched;
#   3. a run with a failing gate exits 1 and the report says FAIL.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-deps-update: FAIL: $*"; [[ -f ${2:-} ]] && cat "$2"; exit 1; }

repo=$tmp/repo
mkdir -p "$repo"
cat >"$repo/go.mod" <<'MOD'
module example.com/depscheck

go 1.26

require golang.org/x/text v0.3.6
MOD
cat >"$repo/main.go" <<'SRC'
package main

import (
	"fmt"

	"golang.org/x/text/language"
)

func main() { fmt.Println(language.English) }
SRC
(cd "$repo" && GOWORK=off GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 &&
	git init -q && git add -A && git -c user.name=check -c user.email=check@example.com commit -qm init)
before=$(cat "$repo/go.mod" "$repo/go.sum" | sha256sum)

# 1. The proposal only.
DEPS_ROOT=$repo DEPS_MODULES=. DEPS_REPORT=$tmp/dry.md ./scripts/deps-update.sh -dry-run >/dev/null 2>"$tmp/err" ||
	fail "-dry-run exited $?" "$tmp/err"
grep -Eq '^\| `\.` \| `golang.org/x/text` \| v0\.3\.6 \| v0\.[0-9]+\.[0-9]+ \| minor \(v0\) \|' "$tmp/dry.md" ||
	fail "the dry run does not propose golang.org/x/text v0.3.6 -> a newer v0 minor" "$tmp/dry.md"
grep -q 'Dry run' "$tmp/dry.md" || fail "the dry-run report does not say it applied nothing" "$tmp/dry.md"
[[ ! -e $tmp/dry.patch ]] || fail "the dry run wrote a patch"
[[ $(cat "$repo/go.mod" "$repo/go.sum" | sha256sum) == "$before" ]] || fail "the dry run changed the repository"
echo "check-deps-update: ok, -dry-run proposes golang.org/x/text v0.3.6 -> $(grep -o 'v0\.3\.6 | v0\.[0-9.]*' "$tmp/dry.md" | awk '{print $3}')"

# 2. Applied, gated and scanned in a scratch worktree.
DEPS_ROOT=$repo DEPS_MODULES=. DEPS_REPORT=$tmp/run.md DEPS_GATE='go build ./... && go vet ./...' \
	./scripts/deps-update.sh >/dev/null 2>"$tmp/err" || fail "a run with a passing gate exited $?" "$tmp/run.md"
grep -q '`go build ./... && go vet ./...` in the updated tree: \*\*pass\*\*' "$tmp/run.md" || fail "the report does not say the gate passed" "$tmp/run.md"
grep -q 'on the updated tree: \*\*pass\*\*' "$tmp/run.md" || fail "the report does not say the scan passed" "$tmp/run.md"
grep -q '^-require golang.org/x/text v0.3.6' "$tmp/run.patch" || grep -q '^-.*golang.org/x/text v0.3.6$' "$tmp/run.patch" ||
	fail "the patch does not move golang.org/x/text off v0.3.6" "$tmp/run.patch"
[[ $(cat "$repo/go.mod" "$repo/go.sum" | sha256sum) == "$before" ]] || fail "the run changed the repository itself"
[[ -z $(git -C "$repo" worktree list --porcelain | grep -c '^worktree' | grep -v '^1$') ]] || fail "the scratch worktree was left behind"
(cd "$repo" && git apply "$tmp/run.patch" && GOWORK=off go build ./...) || fail "the patch does not apply and build"
echo "check-deps-update: ok, a passing gate and scan on the applied proposal, the patch applies"

# 3. A failing gate fails the run.
git -C "$repo" checkout -q -- .
code=0
DEPS_ROOT=$repo DEPS_MODULES=. DEPS_REPORT=$tmp/bad.md DEPS_GATE='echo gate says no; exit 7' DEPS_VULN=0 \
	./scripts/deps-update.sh >/dev/null 2>"$tmp/err" || code=$?
[[ $code == 1 ]] || fail "a failing gate exited $code, want 1" "$tmp/bad.md"
grep -q '\*\*FAIL\*\* (exit 7)' "$tmp/bad.md" && grep -q 'gate says no' "$tmp/bad.md" || fail "the report does not show the failing gate" "$tmp/bad.md"
echo "check-deps-update: ok, a failing gate fails the run and the report shows why"
