#!/usr/bin/env bash
# check-rename.sh proves that a new service can start from this template:
# it copies the working tree to a temporary directory, renames the module
# with scripts/rename.sh, and requires that the copy names the old path
# nowhere, passes `make lint` in a fresh git repository (and lint fails on
# an unformatted untracked file), builds, vets and passes its unit tests;
# then it removes the examples (make remove-examples) and requires that
# what remains builds, lints and passes make test's tests (-short) against the
# real Postgres and Redis (TEST_DATABASE_URL, TEST_REDIS_URL). No network
# beyond what the module cache already holds (GOPROXY=off in the copy).
# The copy is always removed.
set -euo pipefail

NEW_MODULE=${NEW_MODULE:-example.com/acme/newsvc}
# The copy's full test run needs the real services; the Makefile's defaults.
export TEST_DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
export TEST_REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/0}

log() { printf 'check-rename: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

cd "$(dirname "$0")/.."
command -v go >/dev/null || die "the go command is not on PATH; install Go 1.26"
old=$(awk '$1 == "module" { print $2; exit }' go.mod)
# A clone that already took the default name proves itself with another.
[ "$old" != "$NEW_MODULE" ] || NEW_MODULE=example.com/acme/othersvc

# Fill the module cache from the original tree (a no-op when it is warm), so
# the copy can run with the network off.
go list -deps -test ./... >/dev/null
go mod tidy -diff >/dev/null 2>&1 || true # lint checks tidiness; that needs every build tag's modules

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-rename.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Tracked and untracked-but-not-ignored files: what a clone would see plus
# work in progress. Without git, everything except .git.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -xf - -C "$tmp"
else
  tar --exclude=.git -cf - . | tar -xf - -C "$tmp"
fi
log "copied the tree to $tmp"

cd "$tmp"
# GOTOOLCHAIN comes from the Makefile; the toolchain is already in the module cache.
export GOPROXY=off GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-go1.26.10}"
bash scripts/rename.sh "$NEW_MODULE" >/dev/null

left=$(grep -rlIF --exclude-dir=.git -- "$old" . || true)
[ -z "$left" ] || die "the renamed copy still references $old in: $left"
[ "$(GOWORK=off go list -m)" = "$NEW_MODULE" ] || die "go.mod module is not $NEW_MODULE"
unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || die "gofmt needed after rename: $unformatted"

# The README's new-service steps start a fresh repository (nothing tracked
# yet); `make lint` must check every Go file there, tracked or not, and never
# wait on standard input.
git init -q . 2>/dev/null || true
log "make lint (fresh git repository, nothing tracked)"
timeout 300 make -s lint </dev/null >lint.out 2>&1 || { cat lint.out >&2; die "make lint fails on the renamed copy"; }
printf 'package main\nfunc  unformatted() {}\n' >apps/api/zz_lint_probe.go
if timeout 300 make -s lint </dev/null >lint.out 2>&1; then die "make lint passed with an unformatted untracked file"; fi
grep -q zz_lint_probe.go lint.out || { cat lint.out >&2; die "make lint failed without naming the unformatted file"; }
rm -f apps/api/zz_lint_probe.go lint.out

log "go build ./..."
go build ./...
log "go vet ./..."
go vet ./...
(cd bench && go vet ./...)
log "go test -count=1 ./core/... ./adapters/memory/ ./internal/... (no services needed)"
go test -count=1 ./core/... ./adapters/memory/ ./internal/...

# The README's next step for most services: remove the examples. What is
# left must build, vet, lint and pass make test's tests (-short) against the real
# Postgres and Redis (TEST_DATABASE_URL / TEST_REDIS_URL, as `make test`).
log "make remove-examples, then build, vet, lint and make test's tests (-short) of what remains"
make -s remove-examples >/dev/null
[ ! -d examples ] || die "remove-examples left examples/"
left=$(grep -rlIE -- '/api/v1/(topups|wallets|device-assignments)' apps docs/openapi.yaml || true)
[ -z "$left" ] || die "after remove-examples these still refer to the examples' routes: $left"
go build ./...
timeout 600 make -s lint </dev/null >lint.out 2>&1 || { cat lint.out >&2; die "make lint fails after remove-examples"; }
rm -f lint.out
# -short: the inner loop's tier. The failover/loss/crash scenarios wait on
# faults, not on names; make test-full runs them on the tree itself.
go test -race -short -count=1 -timeout 20m ./...
log "OK: the tree renamed to $NEW_MODULE builds, vets and passes its unit tests; without the examples it builds, lints and passes make test's tier (-short)"
