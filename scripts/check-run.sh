#!/usr/bin/env bash
# check-run.sh proves `make run` on this machine: run.sh -h prints its
# variables and starts nothing; a REDIS_URL naming another server is
# refused; output into a closed pipe stops a run through its cleanup; then it starts scripts/run.sh on
# spare ports, waits until the api and the relay answer /readyz, checks that
# the api's /metrics is on its admin port and not its public one, asks the API
# for the relay's config with the printed token, creates a top-up and
# waits until the relay has delivered it and the wallet is credited (the
# example domain end to end), updates a config key and replays an event and finds their
# audit records with `relay audit list` (no failed or retried row), runs
# scripts/check-contract.sh (Prism validating every answer), stops it with SIGTERM (what
# Ctrl-C does to the script) and checks that it exits cleanly, leaves no
# api or relay process behind and frees the ports.
set -euo pipefail
cd "$(dirname "$0")/.."

# The database and Redis DB default to names derived from the module.
module=$(awk '$1 == "module" { print $2; exit }' go.mod)
names=$(env -u DB_NAME -u REDIS_DB ./scripts/run.sh --names)
want_db="$(basename "$module" | tr -c 'a-z0-9\n' '_')_dev"
[[ $names == "DB_NAME=$want_db REDIS_DB="* ]] || { echo "check-run: FAIL: run.sh --names printed \"$names\", want DB_NAME=$want_db"; exit 1; }
[ "$(DB_NAME=x REDIS_DB=9 ./scripts/run.sh --names)" = "DB_NAME=x REDIS_DB=9" ] || { echo "check-run: FAIL: DB_NAME/REDIS_DB do not override"; exit 1; }

# A taken HTTP_ADDR (here: Postgres's port) fails at once with the cause and
# the variable to change, before anything is built or started.
busy=$(mktemp)
code=0
HTTP_ADDR=127.0.0.1:${PGPORT:-5432} timeout 20 ./scripts/run.sh >"$busy" 2>&1 || code=$?
if [ "$code" = 0 ] || [ "$code" = 124 ] || ! grep -q 'already in use' "$busy" || ! grep -q 'HTTP_ADDR=' "$busy"; then
  echo "check-run: FAIL: run.sh with HTTP_ADDR taken exited $code without naming the cause and HTTP_ADDR:"; cat "$busy"; exit 1
fi
rm -f "$busy"

# -h prints the variables it reads and starts nothing (a taken HTTP_ADDR
# would fail a run at once).
code=0
help=$(HTTP_ADDR=127.0.0.1:${PGPORT:-5432} timeout 20 ./scripts/run.sh -h 2>&1) || code=$?
[ "$code" = 0 ] && [[ $help == *Usage:* && $help == *REDIS_PORT* && $help == *REDIS_URL* ]] \
  || { echo "check-run: FAIL: run.sh -h exited $code without its usage:"; echo "$help"; exit 1; }
[[ $help != *"already in use"* ]] || { echo "check-run: FAIL: run.sh -h went on to check the addresses"; exit 1; }

# A REDIS_URL (or DATABASE_URL) naming another server is refused, not
# overwritten, and its value (a password) is not printed.
code=0
refused=$(REDIS_URL=redis://u:hunter2@10.0.0.1:6379/0 timeout 20 ./scripts/run.sh 2>&1) || code=$?
if [ "$code" != 2 ] || [[ $refused != *"REDIS_URL is set"* ]] || [[ $refused == *hunter2* ]]; then
  echo "check-run: FAIL: run.sh with another REDIS_URL exited $code, want 2 naming REDIS_URL without its value:"; echo "$refused"; exit 1
fi

# Its own ports, database and Redis DB, never those a developer's `make run`
# uses; CHECK_RUN_* choose others when two checks share a machine (say, a
# service's gate beside the template's).
export HTTP_ADDR=${CHECK_RUN_HTTP_ADDR:-127.0.0.1:18080} ADMIN_ADDR=${CHECK_RUN_ADMIN_ADDR:-127.0.0.1:19090}
export API_ADMIN_ADDR=${CHECK_RUN_API_ADMIN_ADDR:-127.0.0.1:19091} DB_NAME=${CHECK_RUN_DB_NAME:-july_runcheck}
dev_redis_db=${names##*REDIS_DB=}
export REDIS_DB=${CHECK_RUN_REDIS_DB:-$(( dev_redis_db == 15 ? 14 : 15 ))}
# listening ADDR: something accepts connections on ADDR.
listening() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }

# Output into a pipe that closes (make run piped into head) stops the run
# through its cleanup instead of killing it (141) before it.
closed=$(mktemp)
code=0
timeout 300 ./scripts/run.sh 2>"$closed" > >(IFS= read -r _) || code=$?
if [ "$code" = 0 ] || [ "$code" = 124 ] || ! grep -q 'run:.* stopped$' "$closed"; then
  echo "check-run: FAIL: run.sh writing into a closed pipe exited $code without its cleanup (\"stopped\"):"; cat "$closed"; exit 1
fi
for a in "$HTTP_ADDR" "$ADMIN_ADDR" "$API_ADMIN_ADDR"; do
  ! listening "$a" || { echo "check-run: FAIL: $a still listening after run.sh stopped on a closed pipe"; exit 1; }
done
rm -f "$closed"

# Start from a fresh database: a failed earlier run may have left one.
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null 2>&1 || true
ready=$(mktemp) out=$(mktemp)
rm -f "$ready"
fail() { echo "check-run: FAIL: $*"; echo "--- run.sh output"; cat "$out"; exit 1; }
# Every exit path stops what this script started: a failed check must not
# leave the api and relay holding HTTP_ADDR/ADMIN_ADDR/API_ADMIN_ADDR for the next run.
pid=""
stop_run() {
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
  pkill -KILL -P "$pid" 2>/dev/null || true
  kill -KILL "$pid" 2>/dev/null || true
}
trap stop_run EXIT
trap 'exit 130' INT TERM
# Waits are generous, not tight: each step takes about a second alone, and
# a machine busy with other suites can take many times that.
waits=240 # x 0.5 s

RUN_READY_FILE=$ready ./scripts/run.sh >"$out" 2>&1 &
pid=$!
for _ in $(seq 1 360); do
  [ -s "$ready" ] && break
  kill -0 "$pid" 2>/dev/null || fail "run.sh exited before it was ready"
  sleep 0.5
done
[ -s "$ready" ] || fail "not ready within 180s"
curl -fsS "http://$HTTP_ADDR/readyz" >/dev/null || fail "api /readyz"
# Every printed command names the server it acts on.
grep -q "Reset: dropdb -h 127.0.0.1 -p ${PGPORT:-5432} -U postgres --force $DB_NAME && redis-cli -h 127.0.0.1 -p ${REDIS_PORT:-6379} -n $REDIS_DB flushdb" "$out" \
  || fail "the Reset line does not name the Postgres and Redis servers (-h/-p) and the run's DB"
children=$(pgrep -P "$pid" -d ' ' || true)
[ -n "$children" ] || fail "no api or relay process under run.sh"
curl -fsS "http://$ADMIN_ADDR/readyz" >/dev/null || fail "relay /readyz"
# /metrics is on the api's admin listener only, never on its public port.
metrics=$(curl -fsS "http://$API_ADMIN_ADDR/metrics") || fail "api /metrics on API_ADMIN_ADDR"
grep -q '^# TYPE http_requests_total counter' <<<"$metrics" || fail "api /metrics on API_ADMIN_ADDR has no http_requests_total"
code=$(curl -sS -o /dev/null -w '%{http_code}' "http://$HTTP_ADDR/metrics")
[ "$code" = 404 ] || fail "GET /metrics on the api's public port answered $code, want 404"
token=$(grep -o 'token     [^ ]*' "$out" | awk '{print $2}')
[ -n "$token" ] || fail "no token printed"
configs=$(curl -fsS -H "Authorization: Bearer $token" "http://$HTTP_ADDR/api/v1/system-configs?module=relay") || fail "config read with the printed token"
grep -q relay.delivery.batch_size <<<"$configs" || fail "config read with the printed token: no relay.delivery.batch_size"
# The reference domains' steps, while examples/ exists (make remove-examples).
if [ -d examples ]; then
  agent_token=$(grep -o '^  agent     [^ ]*' "$out" | awk '{print $2}')
  [ -n "$agent_token" ] || fail "no agent token printed"
  # The examples' routes need a role: the admin-only token has no wallet.
  code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "http://$HTTP_ADDR/api/v1/wallets/me")
  [ "$code" = 403 ] || fail "GET /wallets/me with the admin token answered $code, want 403 (only agents have wallets)"
  # The printed top-up example, pasted twice: created, then replayed.
  topup_cmd=$(sed -n '/curl -i -X POST/,/api\/v1\/topups/p' "$out")
  [ -n "$topup_cmd" ] || fail "no top-up example printed"
  first=$(bash -c "$topup_cmd -sS" 2>&1) || fail "the printed top-up example failed: $first"
  second=$(bash -c "$topup_cmd -sS" 2>&1) || fail "the printed top-up example failed the second time: $second"
  grep -q '^HTTP/1.1 201' <<<"$first" || fail "the printed top-up example did not answer 201: $first"
  grep -q '^HTTP/1.1 201' <<<"$second" || fail "pasting the top-up example again did not replay 201: $second"
  grep -qi '^Idempotent-Replayed: true' <<<"$second" || fail "pasting the top-up example again is not a replay: $second"
  credited=""
  for _ in $(seq 1 $waits); do
    wallet=$(curl -fsS -H "Authorization: Bearer $agent_token" "http://$HTTP_ADDR/api/v1/wallets/me" || true)
    if grep -q '"balance_cents":1000,' <<<"$wallet"; then
      credited=1; break
    fi
    sleep 0.5
  done
  [ -n "$credited" ] || fail "wallet not credited with 1000 within $((waits / 2))s (relay -> topup.created consumer)"

  # The printed devices example: upload the CSV, poll the task to 已完成
  # with the malformed serial counted as a failure.
  dev_dir=$(mktemp -d)
  (cd "$dev_dir" && eval "$(sed -n "/^  printf 'device_sn/p" "$out")") || fail "the printed devices CSV line failed"
  upload=$(sed -n '/X-Request-ID: dev-devices-0001/,/device-assignments.$/p' "$out")
  [ -n "$upload" ] || fail "no devices upload example printed"
  task=$(cd "$dev_dir" && bash -c "$upload -sS") || fail "the printed devices upload failed"
  task_id=$(grep -o '"task_id":"[^"]*"' <<<"$task" | cut -d'"' -f4)
  [ -n "$task_id" ] || fail "the devices upload answered no task_id: $task"
  done_task=""
  for _ in $(seq 1 $waits); do
    view=$(curl -fsS -H "Authorization: Bearer $agent_token" "http://$HTTP_ADDR/api/v1/device-assignments/$task_id")
    if grep -q '"status":3' <<<"$view"; then done_task=1; break; fi
    sleep 0.5
  done
  [ -n "$done_task" ] || fail "the devices task did not finish within $((waits / 2))s: $view"
  grep -q '"success_count":2' <<<"$view" && grep -q '"failed_count":1' <<<"$view" || fail "devices task counts: $view"
  rm -rf "$dev_dir"
fi

# A config change leaves an audit record that the default relay keeps
# (audit.recorded is consumed, never retried or failed) and lists.
code=$(curl -sS -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $token" -H 'Content-Type: application/json'   -d '{"value":400}' "http://$HTTP_ADDR/api/v1/system-configs/relay.delivery.batch_size")
[ "$code" = 200 ] || fail "PUT relay.delivery.batch_size answered $code, want 200"
export DATABASE_URL="postgres://postgres@127.0.0.1:${PGPORT:-5432}/$DB_NAME?sslmode=disable"
kept=""
for _ in $(seq 1 $waits); do
  audit=$(./bin/relay audit list --resource-id relay.delivery.batch_size 2>/dev/null || true)
  if grep -q config.update <<<"$audit"; then kept=1; break; fi
  sleep 0.5
done
[ -n "$kept" ] || fail "relay audit list does not show the config update within $((waits / 2))s"
# An operator replay (of a delivered event, e.g. the config update's
# audit.recorded: refused, but audited).
ev=""
for _ in $(seq 1 $waits); do
  ev=$(psql -h 127.0.0.1 -p "${PGPORT:-5432}" -U postgres -d "$DB_NAME" -tAc "SELECT event_id FROM tb_outbox_event WHERE status = 3 ORDER BY id LIMIT 1")
  [ -n "$ev" ] && break
  sleep 0.5
done
[ -n "$ev" ] || fail "no delivered event in the outbox"
./bin/relay outbox replay --event-id "$ev" --operator check-run --reason "check-run replay" >/dev/null 2>&1 || fail "relay outbox replay failed"
kept=""
for _ in $(seq 1 $waits); do
  audit=$(./bin/relay audit list --actor check-run 2>/dev/null || true)
  if grep -q outbox.replay <<<"$audit"; then kept=1; break; fi
  sleep 0.5
done
[ -n "$kept" ] || fail "relay audit list does not show the replay within $((waits / 2))s"
bad=$(psql -h 127.0.0.1 -p "${PGPORT:-5432}" -U postgres -d "$DB_NAME" -tAc "SELECT count(*) FROM tb_outbox_event WHERE status = 4 OR (event_type = 'audit.recorded' AND retry_count > 0)")
[ "$bad" = 0 ] || fail "$bad outbox rows failed or retried in the default deployment"

# The HTTP contract, checked by an independent validator (Stoplight Prism
# as a validating proxy) over the flows a client uses.
./scripts/check-contract.sh "http://$HTTP_ADDR" "$token" "${agent_token:-}" || fail "the HTTP contract through Prism (above)"

kill -TERM "$pid"
for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
kill -0 "$pid" 2>/dev/null && fail "run.sh still running 60s after SIGTERM"
wait "$pid" && code=0 || code=$?
[ "$code" = 0 ] || fail "run.sh exited $code"
if curl -fsS "http://$HTTP_ADDR/healthz" >/dev/null 2>&1 || curl -fsS "http://$ADMIN_ADDR/healthz" >/dev/null 2>&1 \
  || curl -fsS "http://$API_ADMIN_ADDR/healthz" >/dev/null 2>&1; then
  fail "api or relay still answering after shutdown"
fi
for child in $children; do
  ! kill -0 "$child" 2>/dev/null || fail "process $child ($(ps -o comm= -p "$child")) still running after run.sh stopped on SIGTERM"
done
for a in "$HTTP_ADDR" "$ADMIN_ADDR" "$API_ADMIN_ADDR"; do
  ! listening "$a" || fail "$a still listening after run.sh stopped on SIGTERM"
done
grep -q "stopping on your request" "$out" || fail "no message that the user stopped it"
grep -q "stopped by itself" "$out" && fail "a process reported as stopped by itself after SIGTERM"
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null 2>&1 || true
rm -f "$ready" "$out"
echo "check-run: OK: make run came up healthy, credited a top-up through the relay and shut down cleanly"
