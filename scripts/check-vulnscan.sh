#!/usr/bin/env bash
# Proves the vulnerability scan can fail: a scratch module pinned to a
# vulnerable golang.org/x/text (v0.3.6, GO-2021-0113, fixed in v0.3.7) that
# calls the vulnerable function is built and scanned through the same script
# and policy as the real binaries; the scan must fail and name the entry.
# It also proves an expired exception fails.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/planted"
cat >"$tmp/planted/go.mod" <<'MOD'
module example.com/planted

go 1.26

require golang.org/x/text v0.3.6
MOD
cat >"$tmp/planted/main.go" <<'SRC'
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
(cd "$tmp/planted" && GOWORK=off GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 && GOWORK=off go build -o planted .)

set +e
out=$(SUPPLY_CHAIN_BINARIES="planted=$tmp/planted/planted" ./scripts/supply-chain.sh check 2>&1)
rc=$?
set -e
if [[ $rc -eq 0 ]] || ! grep -q 'FAIL reachable in production binary: binary planted: GO-2021-0113' <<<"$out"; then
	echo "check-vulnscan: the planted vulnerable golang.org/x/text v0.3.6 did not fail the scan (exit $rc):"
	echo "$out"
	exit 1
fi
echo "check-vulnscan: ok, the planted GO-2021-0113 fails the scan"

# An expired exception fails even when its finding is excepted.
printf 'GO-2021-0113 2000-01-01 planted, long expired\n' >"$tmp/exc.txt"
bin=${SUPPLY_CHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/july-template/supply-chain}/bin
set +e
out=$("$bin/supplychain" vulnpolicy -exceptions "$tmp/exc.txt" \
	"binary:planted=${SUPPLY_CHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/july-template/supply-chain}/out/vuln-binary-planted.json" 2>&1)
rc=$?
set -e
if [[ $rc -eq 0 ]] || ! grep -q 'exception GO-2021-0113 expired on 2000-01-01' <<<"$out"; then
	echo "check-vulnscan: an expired exception did not fail (exit $rc):"
	echo "$out"
	exit 1
fi
echo "check-vulnscan: ok, an expired exception fails"
