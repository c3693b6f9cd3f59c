#!/usr/bin/env bash
# Proves the rescan of kept artefacts (scripts/rescan.sh, make rescan) reads
# what a build kept, not a rebuild: a build of a scratch module pinned to a
# vulnerable golang.org/x/text (v0.3.6, GO-2021-0113, the one
# check-vulnscan.sh plants) is kept through `supply-chain.sh artifacts` (the
# same code that keeps every build's binaries, SBOMs and manifest), its
# source and build output are deleted, and then
#   1. the rescan fails on the kept binary (binary mode, the policy) and
#      lists the module in its kept SBOM;
#   2. with only the SBOM kept (an image's, say), the rescan fails on it;
#   3. the same kept for x/text at a fixed version passes.
# The database is the pinned one (cached, offline); make rescan's default
# is the newest on the module proxy.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-rescan: FAIL: $*"; echo "--- output"; cat "$tmp/out"; exit 1; }

# keep NAME XTEXT_VERSION: build a scratch module calling the vulnerable
# function with that x/text, keep it as a build's artefacts in
# $tmp/dist/NAME, and delete everything else of it.
keep() {
	local src=$tmp/src-$1
	mkdir -p "$src"
	cat >"$src/go.mod" <<MOD
module example.com/$1

go 1.26

require golang.org/x/text $2
MOD
	cat >"$src/main.go" <<'SRC'
package main

import (
	"fmt"
	"os"

	"golang.org/x/text/language"
)

func main() {
	tags, _, err := language.ParseAcceptLanguage(os.Getenv("LANGS"))
	fmt.Println(tags, err)
}
SRC
	(cd "$src" && GOWORK=off GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 && GOWORK=off go build -o "$1" .)
	SUPPLY_CHAIN_BINARIES="$1=$src/$1" SUPPLY_CHAIN_ARTIFACTS=$tmp/dist/$1 ./scripts/supply-chain.sh artifacts >/dev/null 2>&1 ||
		{ echo "check-rescan: FAIL: supply-chain.sh artifacts did not keep $1"; exit 1; }
	rm -rf "$src"
	[[ -x $tmp/dist/$1/bin/$1 && -s $tmp/dist/$1/sbom/$1.cdx.json && -s $tmp/dist/$1/manifest.txt ]] ||
		{ echo "check-rescan: FAIL: $tmp/dist/$1 lacks bin/, sbom/ or manifest.txt"; ls -R "$tmp/dist/$1"; exit 1; }
}

keep planted v0.3.6
keep fixed v0.44.0

# 1. The kept binary fails; the kept SBOM lists the module.
code=0
RESCAN_VULNDB=pinned ./scripts/rescan.sh "$tmp/dist/planted" >"$tmp/out" 2>&1 || code=$?
[[ $code != 0 ]] || fail "the rescan of a kept vulnerable build passed"
grep -q 'FAIL reachable in production binary: binary planted: GO-2021-0113' "$tmp/out" || fail "the rescan did not judge the kept binary"
grep -q 'note sbom planted.cdx.json: GO-2021-0113 golang.org/x/text@v0.3.6' "$tmp/out" || fail "the rescan did not find x/text v0.3.6 in the kept SBOM"
ls "$tmp/dist/planted/rescan/"*/vulnpolicy.txt >/dev/null 2>&1 || fail "the rescan kept no results next to the artefacts"
echo "check-rescan: ok, the kept binary fails the rescan with GO-2021-0113 and its SBOM lists it"

# 2. Only the SBOM kept: the SBOM is judged.
rm -rf "$tmp/dist/planted/bin" "$tmp/dist/planted/rescan"
code=0
RESCAN_VULNDB=pinned ./scripts/rescan.sh "$tmp/dist/planted" >"$tmp/out" 2>&1 || code=$?
[[ $code != 0 ]] || fail "the rescan of a kept SBOM with x/text v0.3.6 passed"
grep -q 'FAIL sbom planted.cdx.json: GO-2021-0113 golang.org/x/text@v0.3.6' "$tmp/out" || fail "the rescan did not judge the kept SBOM"
echo "check-rescan: ok, a kept SBOM alone fails the rescan with GO-2021-0113"

# 3. A build at the fixed version passes.
RESCAN_VULNDB=pinned ./scripts/rescan.sh "$tmp/dist/fixed" >"$tmp/out" 2>&1 || fail "the rescan of a kept build at x/text v0.44.0 failed"
grep -q 'sbomscan: fixed.cdx.json: .* 0 affected' "$tmp/out" || fail "the kept SBOM at x/text v0.44.0 was not scanned"
echo "check-rescan: ok, a kept build at a fixed version passes"
