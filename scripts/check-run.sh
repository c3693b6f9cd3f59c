#!/usr/bin/env bash
# check-run.sh proves `make run` on this machine: it starts scripts/run.sh on
# spare ports, waits until the api and the relay answer /readyz, asks the API
# for the relay's config with the printed token, creates a top-up and
# waits until the relay has delivered it and the wallet is credited (the
# example domain end to end), updates a config key and replays an event and finds their
# audit records with `relay audit list` (no failed or retried row), stops it with SIGTERM (what
# Ctrl-C does to the script) and checks that it exits cleanly and leaves no
# api or relay process behind.
set -euo pipefail
cd "$(dirname "$0")/.."
export HTTP_ADDR=127.0.0.1:18080 ADMIN_ADDR=127.0.0.1:19090 DB_NAME=july_runcheck
# Start from a fresh database: a failed earlier run may have left one.
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null 2>&1 || true
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
key="check-run-topup-$(date +%s)"
topup() {
  curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H "X-Request-ID: $key" -d '{"amount_cents":1000,"channel":"wechat"}' "http://$HTTP_ADDR/api/v1/topups"
}
[ "$(topup)" = 201 ] || fail "POST /api/v1/topups did not answer 201"
[ "$(topup)" = 201 ] || fail "a retry with the same X-Request-ID did not replay 201"
credited=""
for _ in $(seq 1 60); do
  if curl -fsS -H "Authorization: Bearer $token" "http://$HTTP_ADDR/api/v1/wallets/me" | grep -q '"balance_cents":1000,'; then
    credited=1; break
  fi
  sleep 0.5
done
[ -n "$credited" ] || fail "wallet not credited with 1000 within 30s (relay -> topup.created consumer)"

# A config change leaves an audit record that the default relay keeps
# (audit.recorded is consumed, never retried or failed) and lists.
code=$(curl -sS -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $token" -H 'Content-Type: application/json'   -d '{"value":400}' "http://$HTTP_ADDR/api/v1/system-configs/relay.delivery.batch_size")
[ "$code" = 200 ] || fail "PUT relay.delivery.batch_size answered $code, want 200"
export DATABASE_URL="postgres://postgres@127.0.0.1:${PGPORT:-5432}/$DB_NAME?sslmode=disable"
kept=""
for _ in $(seq 1 60); do
  if ./bin/relay audit list --resource-id relay.delivery.batch_size 2>/dev/null | grep -q config.update; then kept=1; break; fi
  sleep 0.5
done
[ -n "$kept" ] || fail "relay audit list does not show the config update within 30s"
# An operator replay (of the delivered top-up event: refused, but audited).
ev=$(psql -h 127.0.0.1 -p "${PGPORT:-5432}" -U postgres -d "$DB_NAME" -tAc "SELECT event_id FROM tb_outbox_event WHERE event_type = 'topup.created' LIMIT 1")
[ -n "$ev" ] || fail "no topup.created event in the outbox"
./bin/relay outbox replay --event-id "$ev" --operator check-run --reason "check-run replay" >/dev/null 2>&1 || fail "relay outbox replay failed"
kept=""
for _ in $(seq 1 60); do
  if ./bin/relay audit list --actor check-run 2>/dev/null | grep -q outbox.replay; then kept=1; break; fi
  sleep 0.5
done
[ -n "$kept" ] || fail "relay audit list does not show the replay within 30s"
bad=$(psql -h 127.0.0.1 -p "${PGPORT:-5432}" -U postgres -d "$DB_NAME" -tAc "SELECT count(*) FROM tb_outbox_event WHERE status = 4 OR (event_type = 'audit.recorded' AND retry_count > 0)")
[ "$bad" = 0 ] || fail "$bad outbox rows failed or retried in the default deployment"

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
echo "check-run: OK: make run came up healthy, credited a top-up through the relay and shut down cleanly"
