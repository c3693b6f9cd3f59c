#!/usr/bin/env bash
# check-contract.sh API_URL ADMIN_TOKEN [AGENT_TOKEN]
#
# Puts Stoplight Prism (an independent OpenAPI validator, pinned, from the
# npm registry) as a validating proxy in front of a running api and drives
# the HTTP flows a client uses through it: config list/get/put and their
# errors, top-up create/replay/reused key/missing body, the wallet, a device
# upload polled to the end with its failures and a cancel. Prism compares
# every request and answer with docs/openapi.yaml (--errors); one violation,
# or one answer other than the flow expects, fails the check. The examples'
# flows run while examples/ exists. scripts/check-run.sh calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
api=${1:?api url}
admin=${2:?admin token}
agent=${3:-}

PRISM_VERSION=5.16.0
dir=${XDG_CACHE_HOME:-$HOME/.cache}/july-template/prism-$PRISM_VERSION
prism=$dir/node_modules/.bin/prism
if [[ ! -x $prism ]]; then
  command -v npm >/dev/null || { echo "check-contract: npm is needed (Debian: apt-get install nodejs npm)" >&2; exit 1; }
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --silent "@stoplight/prism-cli@$PRISM_VERSION" >&2
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log=$(mktemp) body=$(mktemp) work=$(mktemp -d)
"$prism" proxy docs/openapi.yaml "$api" --errors --host 127.0.0.1 --port "$port" >"$log" 2>&1 &
pid=$!
# Stop Prism on every exit path.
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$log" "$body" "$work"' EXIT
P=http://127.0.0.1:$port
fail() { echo "check-contract: FAIL: $*"; echo "--- last answer"; cat "$body"; echo; echo "--- prism log"; tail -40 "$log"; exit 1; }
# Generous: Prism starts in a second or two alone; a busy machine is slower.
for _ in $(seq 1 240); do
  curl -fsS -o /dev/null "$P/healthz" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || fail "prism exited"
  sleep 0.5
done
curl -fsS -o /dev/null "$P/healthz" || fail "prism did not come up"

flows=0
# call WANT METHOD PATH [curl args...]: one request through Prism; the
# status must be WANT.
call() {
  local want=$1 method=$2 path=$3
  shift 3
  local got
  got=$(curl -sS --max-time 60 -o "$body" -w '%{http_code}' -X "$method" "$@" "$P$path") || fail "$method $path: curl failed"
  [[ $got == "$want" ]] || fail "$method $path answered $got, want $want"
  flows=$((flows + 1))
}
A=(-H "Authorization: Bearer $admin")
J=(-H 'Content-Type: application/json')

call 200 GET /healthz
call 200 GET /readyz
call 200 GET /openapi.yaml
call 200 GET '/api/v1/system-configs?module=relay' "${A[@]}"
call 401 GET /api/v1/system-configs -H "Authorization: Bearer not-a-token"
call 200 GET /api/v1/system-configs/relay.delivery.batch_size "${A[@]}"
version=$(grep -o -m1 '"version":[0-9]*' "$body" | cut -d: -f2)
call 404 GET /api/v1/system-configs/relay.delivery.no_such_key "${A[@]}"
call 200 PUT /api/v1/system-configs/relay.delivery.batch_size "${A[@]}" "${J[@]}" -d '{"value":300}'
call 422 PUT /api/v1/system-configs/relay.delivery.batch_size "${A[@]}" "${J[@]}" -d '{"value":"many"}'
call 409 PUT /api/v1/system-configs/relay.delivery.batch_size "${A[@]}" "${J[@]}" -d "{\"value\":301,\"version\":$version}"
# (A body that is not JSON is left to the Go tests: Prism 5.16 never answers one.)

if [[ -d examples && -n $agent ]]; then
  G=(-H "Authorization: Bearer $agent")
  rid=contract-topup-$RANDOM$RANDOM
  call 201 POST /api/v1/topups "${G[@]}" "${J[@]}" -H "X-Request-ID: $rid" -d '{"amount_cents":500,"channel":"wechat"}'
  topup=$(grep -o '"topup_id":"[^"]*"' "$body" | cut -d'"' -f4)
  [[ -n $topup ]] || fail "the top-up answer has no topup_id"
  call 201 POST /api/v1/topups "${G[@]}" "${J[@]}" -H "X-Request-ID: $rid" -d '{"amount_cents":500,"channel":"wechat"}'
  call 422 POST /api/v1/topups "${G[@]}" "${J[@]}" -H "X-Request-ID: $rid" -d '{"amount_cents":600,"channel":"wechat"}'
  call 422 POST /api/v1/topups "${G[@]}" "${J[@]}" -H "X-Request-ID: $rid-2" -d '{"channel":"wechat"}'
  call 403 POST /api/v1/topups "${A[@]}" "${J[@]}" -H "X-Request-ID: $rid-3" -d '{"amount_cents":500,"channel":"wechat"}'
  call 200 GET "/api/v1/topups/$topup" "${G[@]}"
  call 404 GET /api/v1/topups/00000000-0000-4000-8000-000000000000 "${G[@]}"
  call 200 GET /api/v1/wallets/me "${G[@]}"

  printf 'device_sn,target_agent_id\nCT%08d,dev-agent\nsn-bad,dev-agent\n' "$RANDOM" >"$work/devices.csv"
  call 202 POST /api/v1/device-assignments "${G[@]}" -H "X-Request-ID: contract-dev-$RANDOM$RANDOM" -F "file=@$work/devices.csv"
  task=$(grep -o '"task_id":"[^"]*"' "$body" | cut -d'"' -f4)
  [[ -n $task ]] || fail "the upload answer has no task_id"
  done_task=""
  for _ in $(seq 1 240); do
    call 200 GET "/api/v1/device-assignments/$task" "${G[@]}"
    if grep -q '"status":[345]' "$body"; then done_task=1; break; fi
    sleep 0.5
  done
  [[ -n $done_task ]] || fail "the device task did not end within 120 s"
  call 200 GET "/api/v1/device-assignments/$task/failures" "${G[@]}"
  call 409 POST "/api/v1/device-assignments/$task/cancel" "${G[@]}"
  call 404 GET /api/v1/device-assignments/00000000-0000-4000-8000-000000000000 "${G[@]}"
fi

if grep -qi 'violation' "$log"; then
  echo "--- prism log"; cat "$log"; echo "check-contract: FAIL: prism reported contract violations (above)"; exit 1
fi
echo "check-contract: OK: $flows requests through Prism $PRISM_VERSION, every request and answer as docs/openapi.yaml says"
