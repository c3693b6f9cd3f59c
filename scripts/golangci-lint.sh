#!/usr/bin/env bash
# golangci-lint.sh runs golangci-lint (pinned below; .golangci.yml says
# which linters and why) on every module of the checkout and every build
# tag the tests use. It installs the pinned version once, into the cache
# outside the checkout, through the Go module proxy (checksums verified).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v2.15.0
GO=${GO:-go}
BIN=${GOLANGCI_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/july-tools/golangci-lint-$VERSION}
if [ ! -x "$BIN/golangci-lint" ]; then
  echo "golangci-lint.sh: installing golangci-lint $VERSION into $BIN (once; about 2 minutes)" >&2
  mkdir -p "$BIN"
  GOWORK=off GOBIN=$BIN $GO install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION"
fi
lint=$BIN/golangci-lint
cfg=$(pwd)/.golangci.yml
rc=0
# Every tag a file is built under (grep '^//go:build' to list them); no
# file is built only without a tag, so one run covers the main module.
"$lint" run --config "$cfg" --build-tags pooler,drdrill,testdomain,e2efault,contractbreak ./... || rc=1
(cd contracttests/containers && "$lint" run --config "$cfg" ./...) || rc=1
if [ -f bench/go.mod ]; then (cd bench && "$lint" run --config "$cfg" ./...) || rc=1; fi
[ "$rc" = 0 ] || { echo "golangci-lint.sh: findings above; fix them, or say on the line why not (//nolint:<linter> // reason)" >&2; exit 1; }
echo "golangci-lint $VERSION: no findings"
