#!/usr/bin/env bash
# check-run.sh proves `make run` on this machine: it starts scripts/run.sh on
# spare ports, waits until the api and the relay answer /readyz, asks the API
# for the relay's config with the printed token, stops it with SIGTERM (what
# Ctrl-C does to the script) and checks that it exits cleanly and leaves no
# api or relay process behind.
set -euo pipefail
cd "$(dirname "$0")/.."
export HTTP_ADDR=127.0.0.1:18080 ADMIN_ADDR=127.0.0.1:19090 DB_NAME=july_runcheck
ready=$(mktemp) out=$(mktemp)
rm -f "$ready"
fail() { echo "check-run: FAIL: $*"; echo "--- run.sh output"; cat "$out"; exit 1; }

RUN_READY_FILE=$ready ./scripts/run.sh >"$out" 2>&1 &
pid=$!
for _ in $(seq 1 360); do
  [ -s "$ready" ] && break
  kill -0 "$pid" 2>/dev/null || fail "run.sh exited before it was ready"
  sleep 0.5
done
[ -s "$ready" ] || fail "not ready within 180s"
curl -fsS "http://$HTTP_ADDR/readyz" >/dev/null || fail "api /readyz"
curl -fsS "http://$ADMIN_ADDR/readyz" >/dev/null || fail "relay /readyz"
token=$(grep -o 'token     [^ ]*' "$out" | awk '{print $2}')
[ -n "$token" ] || fail "no token printed"
curl -fsS -H "Authorization: Bearer $token" "http://$HTTP_ADDR/api/v1/system-configs?module=relay" | grep -q relay.delivery.batch_size \
  || fail "config read with the printed token"

kill -TERM "$pid"
for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
kill -0 "$pid" 2>/dev/null && fail "run.sh still running 60s after SIGTERM"
wait "$pid" && code=0 || code=$?
[ "$code" = 0 ] || fail "run.sh exited $code"
if curl -fsS "http://$HTTP_ADDR/healthz" >/dev/null 2>&1 || curl -fsS "http://$ADMIN_ADDR/healthz" >/dev/null 2>&1; then
  fail "api or relay still answering after shutdown"
fi
grep -q "stopped" "$out" || fail "no shutdown message"
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null 2>&1 || true
rm -f "$ready" "$out"
echo "check-run: OK: make run came up healthy and shut down cleanly"
