#!/usr/bin/env bash
# The PostgreSQL matrix (`make test-pg-matrix`, part of `make test`): the
# suites that touch Postgres, each against a throwaway server of another
# version or time zone started by scripts/pg-versions.sh (binaries from the
# npm registry, cached outside the checkout), on 127.0.0.1. The default run
# (`go test ./...` in `make test`) covers Debian's PostgreSQL 15 in UTC.
#
# What runs where, and why (the whole addition must stay near 10 minutes
# on the 2-core machine; the suites wait on Postgres far more than they
# compute, so the jobs run two at a time):
#   14, 16, 17, 18  the release step (apps/migrate, adapters/postgres/release),
#                   every Postgres adapter with its contract suites
#                   (adapters/postgres/...), and the harness: the catalog,
#                   locks, SQL and rules are where versions differ.
#   14 and 18       plus the api and relay end-to-end tests (apps/api,
#                   apps/relay; ~2.5 min each): the oldest and newest
#                   supported versions bracket what the binaries use; the
#                   SQL they run is the adapters', tested on every version.
#   15 in Asia/Shanghai, with TZ=Asia/Shanghai for the test processes too
#                   the whole default suite once (docs/postgres.md,
#                   "Supported PostgreSQL": nothing may assume UTC). A server of its
#                   own rather than the 18 run's: the default version, and
#                   18 keeps a UTC run.
# -parallel 4 (PG_MATRIX_PARALLEL): go test's default is GOMAXPROCS, 2
# here, and the e2e and scenario tests mostly wait on failovers, restarts
# and polls, not on the CPU: six at a time took apps/relay (non-race)
# from 324 s to 226 s but ran a 100-connection server out of connections;
# four, on servers that allow 300, is the setting the gate measured (the
# version jobs' matrix 1738 s -> 1379 s, docs/testing.md).
# Without -race: the default run has it; here it would only add CPU.
# PG_MATRIX_RACE=1 adds it: the template's gate runs `make test-full-tz`
# (this script's tz job with -race) in place of make test-full and the tz
# job, so the whole suite runs once, in China time.
#
# Every test process checks it reached the server it was meant for
# (TEST_POSTGRES_VERSION, TEST_POSTGRES_TIMEZONE), a job fails on any
# skipped test, and every server is stopped by PID on every way out.
#
#   scripts/pg-matrix.sh            every job
#   scripts/pg-matrix.sh 18 tz      only these jobs (14 16 17 18 tz)
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
JOBS=${PG_MATRIX_JOBS:-2}
PARALLEL=${PG_MATRIX_PARALLEL:-4}
RACE=()
[[ ${PG_MATRIX_RACE:-} == 1 ]] && RACE=(-race)
RELEASE_PKGS=(./apps/migrate/ ./adapters/postgres/... ./contracttests/testinfra/)
E2E_PKGS=(./apps/api/ ./apps/relay/)
TZ_ZONE=Asia/Shanghai
export TEST_REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/0}

want=("$@")
# longest first: two at a time, the shorter ones fill in behind
((${#want[@]})) || want=(tz 14 18 16 17)

work=$(mktemp -d "${TMPDIR:-/tmp}/pg-matrix.XXXXXX")
pids=()
cleanup() {
  local rc=$? pid
  trap - EXIT INT TERM
  # the test jobs first (each go test runs in a process group of its own,
  # with its test binaries), then the servers
  local f
  for f in "$work"/*.pgid; do
    [[ -f "$f" ]] && kill -TERM -- "-$(cat "$f")" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  for pid in "${pids[@]}"; do ./scripts/pg-versions.sh stop "$pid" || true; done
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { echo "pg-matrix: $*"; }

# Start every server first, in this shell, so the trap knows each PID.
declare -A url
for j in "${want[@]}"; do
  case $j in
    14 | 16 | 17 | 18) major=$j zone=UTC ;;
    tz) major=15 zone=$TZ_ZONE ;;
    *) echo "pg-matrix: unknown job $j (want 14 16 17 18 tz)" >&2; exit 2 ;;
  esac
  url[$j]=$(./scripts/pg-versions.sh start "$major" --timezone "$zone" --pid-file "$work/$j.pid")
  pids+=("$(cat "$work/$j.pid")")
done

# job NAME: one go test run against its server; the log is $work/NAME.log.
job() {
  local j=$1 major=$1 zone=UTC pkgs=("${RELEASE_PKGS[@]}") extra=()
  case $j in
    14 | 18) pkgs+=("${E2E_PKGS[@]}") ;;
    tz) major=15 zone=$TZ_ZONE pkgs=(./...) extra=(TZ="$TZ_ZONE") ;;
  esac
  local start=$SECONDS rc=0
  setsid env "${extra[@]}" TEST_DATABASE_URL="${url[$j]}" TEST_POSTGRES_VERSION="$major" TEST_POSTGRES_TIMEZONE="$zone" \
    "$GO" test "${RACE[@]}" -count=1 -v -parallel "$PARALLEL" -timeout 30m "${pkgs[@]}" >"$work/$j.log" 2>&1 &
  echo $! >"$work/$j.pgid"
  wait $! || rc=$?
  if ((rc == 0)) && grep -q -- '--- SKIP' "$work/$j.log"; then
    echo "pg-matrix: job $j skipped tests; the matrix allows none:" >>"$work/$j.log"
    grep -- '--- SKIP' "$work/$j.log" >>"$work/$j.log"
    rc=1
  fi
  echo "$rc $((SECONDS - start))" >"$work/$j.rc"
}

t0=$SECONDS
running=0
for j in "${want[@]}"; do
  if ((running >= JOBS)); then
    wait -n || true
    running=$((running - 1))
  fi
  say "job $j started: ${url[$j]}"
  job "$j" &
  running=$((running + 1))
done
wait || true

passed=0 failed=0
for j in "${want[@]}"; do
  read -r rc secs <"$work/$j.rc" 2>/dev/null || { rc=1 secs=?; }
  grep -E '^(ok|FAIL|---)' "$work/$j.log" | grep -v '^--- PASS' | sed "s/^/  [$j] /" || true
  if [[ $rc == 0 ]]; then
    say "job $j passed (${secs} s)"
    passed=$((passed + 1))
  else
    say "job $j FAILED (${secs} s); its log:"
    grep -v -E '^(=== (RUN|PAUSE|CONT|NAME)|    --- PASS|--- PASS|PASS$)' "$work/$j.log" | tail -300
    failed=$((failed + 1))
  fi
done
say "$((SECONDS - t0)) s for ${#want[@]} jobs"
echo "pg-matrix: $passed passed, $failed failed"
((failed == 0))
