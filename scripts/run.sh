#!/usr/bin/env bash
# run.sh: one command to run the template locally (make run).
#
# It makes sure Postgres and Redis answer (reusing running servers; else
# `docker compose` when a Docker engine answers; else Debian's packages
# started in a project-local data directory under .run/), applies the
# migrations, starts apps/api and apps/relay, and prints the API address, a
# development token and curl examples. Ctrl-C stops everything it
# started, and nothing else; so do SIGTERM, SIGHUP and a closed output
# (make run piped into head -3). scripts/run.sh -h lists what it reads.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  cat <<'HELP'
Usage: scripts/run.sh [-h | --names]   (make run)

Runs the service locally: Postgres and Redis on 127.0.0.1 (reused when they
answer, else docker compose, else Debian's packages under .run/), migrate up,
then api and relay until Ctrl-C, SIGTERM or SIGHUP, which stop what it
started and nothing else. Every command it prints names the server it acts on.
  --names   print the database and Redis DB a run would use, and exit

Environment (all optional):
  HTTP_ADDR       the api's listener (default 127.0.0.1:8080)
  API_ADMIN_ADDR  the api's admin listener, /metrics (default 127.0.0.1:9091)
  ADMIN_ADDR      the relay's admin listener (default 127.0.0.1:9090)
  PGPORT          Postgres port on 127.0.0.1 (default 5432)
  DB_NAME         database (default <service>_dev, from the module path)
  REDIS_PORT      Redis port on 127.0.0.1 (default 6379)
  REDIS_DB        Redis DB 1-15 (default: derived from the module path)
  LOG_LEVEL       the apps' log level (default info)
  OTEL_EXPORTER_OTLP_ENDPOINT  export traces to this OTLP/HTTP collector
  RUN_READY_FILE  a file to write "ready" into once both apps answer
DATABASE_URL and REDIS_URL are built from these; one set to anything else is
refused (unset it, or choose PGPORT/DB_NAME, REDIS_PORT/REDIS_DB).
HELP
  exit 0
fi
ROOT=$PWD
RUN=$ROOT/.run
mkdir -p "$RUN" "$ROOT/bin"

HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:8080}
ADMIN_ADDR=${ADMIN_ADDR:-127.0.0.1:9090}         # the relay's admin port
API_ADMIN_ADDR=${API_ADMIN_ADDR:-127.0.0.1:9091} # the api's (its ADMIN_ADDR): /metrics
PGPORT=${PGPORT:-5432}
REDIS_PORT=${REDIS_PORT:-6379}
# Names derived from the module, so two services (or two people) on one
# development server do not share a database or a Redis DB by default.
MODULE=$(awk '$1 == "module" { print $2; exit }' go.mod)
SERVICE=$(basename "$MODULE" | tr -c 'a-z0-9\n' '_')
DB_NAME=${DB_NAME:-${SERVICE}_dev}
# Redis DB 1-15 (0 is what every other tool uses), from a checksum of the module.
REDIS_DB=${REDIS_DB:-$(($(printf '%s' "$MODULE" | cksum | cut -d' ' -f1) % 15 + 1))}
LOG_LEVEL=${LOG_LEVEL:-info}
if [ "${1:-}" = --names ]; then # what a run would use (scripts/check-run.sh checks it)
  echo "DB_NAME=$DB_NAME REDIS_DB=$REDIS_DB"
  exit 0
fi

# A write into a closed pipe (make run piped into head) fails with EPIPE instead
# of killing this script before its cleanup; the script then stops what it
# started, as on SIGTERM.
trap '' PIPE
cleaning=""
say() {
  # return 0, not return: in the EXIT trap a bare return gives the exit status
  printf '\033[1mrun:\033[0m %s\n' "$*" 2>/dev/null && return 0
  exec 1>&2 # the output is gone: the rest goes to stderr
  printf 'run: %s\n' "$*" 2>/dev/null || true
  [ -n "$cleaning" ] || exit 1 # the EXIT trap stops what was started
  return 0
}
started_pids=()
started_pg_dir=""
started_compose=""

user_stop=""
cleanup() {
  trap - INT TERM HUP EXIT
  cleaning=1
  if [ -n "$user_stop" ]; then
    say "stopping on your request (Ctrl-C, SIGTERM or SIGHUP): what this command started"
  else
    say "stopping what this command started"
  fi
  for pid in "${started_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${started_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$started_pg_dir" ]; then
    su postgres -s /bin/sh -c "$(pg_bin)/pg_ctl -D '$started_pg_dir' -m fast stop" >/dev/null 2>&1 \
      || "$(pg_bin)/pg_ctl" -D "$started_pg_dir" -m fast stop >/dev/null 2>&1 || true
  fi
  if [ -n "${started_redis_pid:-}" ]; then kill "$started_redis_pid" 2>/dev/null || true; fi
  if [ -n "$started_compose" ]; then docker compose -f deploy/docker-compose.yml stop postgres redis >/dev/null 2>&1 || true; fi
  say "stopped"
}
trap cleanup EXIT
trap 'user_stop=1; cleanup; exit 0' INT TERM HUP

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }

# pg_ready and sql work with the host's client tools, or inside the compose
# container when that is where Postgres runs (a Docker host may have no psql).
pg_ready() {
  if [ -n "$started_compose" ]; then
    docker compose -f deploy/docker-compose.yml exec -T postgres pg_isready -q -U postgres >/dev/null 2>&1
  elif command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -h 127.0.0.1 -p "$PGPORT"
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$PGPORT") 2>/dev/null
  fi
}
sql() {
  if [ -n "$started_compose" ]; then
    docker compose -f deploy/docker-compose.yml exec -T postgres psql -U postgres "$@"
  else
    psql -h 127.0.0.1 -p "$PGPORT" -U postgres "$@"
  fi
}
redis_ready() {
  if [ -n "$started_compose" ]; then
    docker compose -f deploy/docker-compose.yml exec -T redis redis-cli ping >/dev/null 2>&1
  elif command -v redis-cli >/dev/null 2>&1; then
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT") 2>/dev/null
  fi
}
need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    say "$1 is not installed and this is not root: install it, or start it yourself on 127.0.0.1, then rerun"
    exit 1
  fi
}

ensure_postgres() {
  if pg_ready; then
    say "reusing Postgres on 127.0.0.1:$PGPORT"; return
  fi
  if docker info >/dev/null 2>&1; then
    say "starting Postgres and Redis with docker compose"
    POSTGRES_HOST_PORT=$PGPORT REDIS_HOST_PORT=$REDIS_PORT docker compose -f deploy/docker-compose.yml up -d postgres redis
    started_compose=1
  else
    if [ -z "$(pg_bin)" ]; then
      need_root PostgreSQL
      say "installing PostgreSQL from Debian packages"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    local dir=$RUN/pgdata
    if [ ! -s "$dir/PG_VERSION" ]; then
      say "initialising a project-local Postgres in $dir"
      mkdir -p "$dir"
      if [ "$(id -u)" = 0 ]; then chown postgres "$dir" "$RUN"; fi
      as_pg "$(pg_bin)/initdb -D '$dir' -U postgres --auth=trust" >/dev/null
    fi
    say "starting the project-local Postgres on 127.0.0.1:$PGPORT"
    as_pg "$(pg_bin)/pg_ctl -D '$dir' -l '$RUN/postgres.log' -o '-p $PGPORT -k /tmp -c listen_addresses=127.0.0.1' start" >/dev/null
    started_pg_dir=$dir
  fi
  for _ in $(seq 1 60); do pg_ready && return; sleep 0.5; done
  say "Postgres did not come up on 127.0.0.1:$PGPORT"; exit 1
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$1"; else sh -c "$1"; fi
}

ensure_redis() {
  if [ -z "$started_compose" ] && redis_ready; then
    say "reusing Redis on 127.0.0.1:$REDIS_PORT"; return
  fi
  if [ -n "$started_compose" ]; then
    for _ in $(seq 1 60); do redis_ready && return; sleep 0.5; done
  fi
  if ! command -v redis-server >/dev/null; then
    need_root Redis
    say "installing redis-server from Debian packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  say "starting a project-local Redis on 127.0.0.1:$REDIS_PORT"
  mkdir -p "$RUN/redis"
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$RUN/redis" --save "" --appendonly no \
    --logfile "$RUN/redis.log" &
  started_redis_pid=$!
  for _ in $(seq 1 60); do redis_ready && return; sleep 0.5; done
  say "Redis did not come up on 127.0.0.1:$REDIS_PORT"; exit 1
}

# A listener already on HTTP_ADDR, ADMIN_ADDR or API_ADMIN_ADDR would make the api or the
# relay fail after the build, and the readiness poll would ask the foreign
# server: refuse now, with the variable to change.
addr_busy() {
  local host=${1%:*} port=${1##*:}
  [ -n "$host" ] || host=127.0.0.1
  (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}
# The apps act on the servers this script names: a DATABASE_URL or
# REDIS_URL left in the shell for another server is refused, not replaced
# (the value is not printed: URLs carry passwords).
db_url="postgres://postgres@127.0.0.1:$PGPORT/$DB_NAME?sslmode=disable"
redis_url="redis://127.0.0.1:$REDIS_PORT/$REDIS_DB"
for var in DATABASE_URL REDIS_URL; do
  want=$db_url
  [ "$var" = REDIS_URL ] && want=$redis_url
  if [ -n "${!var:-}" ] && [ "${!var}" != "$want" ]; then
    say "$var is set (value hidden) to another server than the one make run uses ($want)."
    say "unset it (env -u $var make run), or choose the local server with PGPORT/DB_NAME or REDIS_PORT/REDIS_DB (scripts/run.sh -h)"
    exit 2
  fi
done

for var in HTTP_ADDR ADMIN_ADDR API_ADMIN_ADDR; do
  if addr_busy "${!var}"; then
    say "${!var} ($var) is already in use by another process (bind: address already in use)."
    say "stop that process, or choose a free address: $var=127.0.0.1:$((${!var##*:} + 10000)) make run"
    exit 1
  fi
done

ensure_postgres
ensure_redis

exists=$(sql -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")
[ "$exists" = 1 ] || sql -qc "CREATE DATABASE $DB_NAME"

export DATABASE_URL=$db_url REDIS_URL=$redis_url
export LOG_LEVEL HTTP_ADDR ADMIN_ADDR
if [ ! -s "$RUN/dev-jwt-secret" ]; then head -c 48 /dev/urandom | base64 | tr -d '\n' > "$RUN/dev-jwt-secret"; fi
AUTH_JWT_SECRET=$(cat "$RUN/dev-jwt-secret")
export AUTH_JWT_SECRET

# The first build compiles every dependency (about 3 minutes on 2 cores);
# later ones take seconds. Show what is being compiled meanwhile.
say "building bin/api bin/relay bin/migrate (the first build takes a few minutes; later ones seconds)"
build_ok=1
n=0
while IFS= read -r line; do
  echo "$line" >>"$RUN/build.log"
  case $line in
  *.go:* | *"cannot find"* | *"no required module"* | go:\ * | \#\ *) ;; # errors: shown below
  *)
    n=$((n + 1))
    if [ -t 1 ]; then
      printf '\r     compiled %d packages: %s\033[K' "$n" "$line"
    elif [ $((n % 100)) = 0 ]; then
      say "  compiled $n packages"
    fi
    ;;
  esac
done < <(: >"$RUN/build.log"; go build -v -o bin/ ./apps/api ./apps/relay ./apps/migrate 2>&1 || echo "BUILD-FAILED")
[ -t 1 ] && printf '\r\033[K'
if grep -q '^BUILD-FAILED$' "$RUN/build.log"; then
  grep -v '^BUILD-FAILED$' "$RUN/build.log" | grep -E '\.go:|^go: |^# ' >&2 || cat "$RUN/build.log" >&2
  say "the build failed (above; all output in $RUN/build.log)"
  exit 1
fi

say "release step: migrate check && migrate up"
bin/migrate check >/dev/null || { bin/migrate check; exit 1; }
bin/migrate up
bin/migrate backfill seed-system-config >/dev/null

bin/relay >"$RUN/relay.log" 2>&1 &
started_pids+=($!)
ADMIN_ADDR=$API_ADMIN_ADDR bin/api >"$RUN/api.log" 2>&1 &
started_pids+=($!)

api_pid=${started_pids[1]} relay_pid=${started_pids[0]}

# exited NAME PID LOG: when the process has exited, say so with the cause
# (its last log lines: a start-up failure is one JSON line with "error").
exited() {
  kill -0 "$2" 2>/dev/null && return 1
  local code=0
  wait "$2" 2>/dev/null || code=$?
  say "$1 exited (code $code) before it was ready; its last log lines ($3):"
  tail -n 5 "$3" | sed 's/^/    /'
  if grep -q 'address already in use' "$3"; then
    say "another process took that address: stop it, or set HTTP_ADDR / ADMIN_ADDR / API_ADMIN_ADDR to a free one"
  fi
  started_pids=("${started_pids[@]/$2/}")
  return 0
}
for target in "api $api_pid $RUN/api.log http://$HTTP_ADDR/readyz" "relay $relay_pid $RUN/relay.log http://$ADMIN_ADDR/readyz"; do
  read -r name pid log url <<<"$target"
  ok=""
  for _ in $(seq 1 60); do
    exited "$name" "$pid" "$log" && exit 1
    if curl -fsS "$url" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.5
  done
  [ -n "$ok" ] || { say "$url did not become ready within 30s; see $log"; exit 1; }
done

TOKEN=$(bin/api token --sub dev-admin --roles super_admin,topup.admin,devices.admin --ttl 12h)
# The reference domains' caller: an agent (docs/security.md).
AGENT_TOKEN=$(bin/api token --sub dev-agent --roles topup.agent,devices.agent --ttl 12h)
cat <<MSG

  API       http://$HTTP_ADDR   (logs: .run/api.log)
  api       http://$API_ADMIN_ADDR/metrics
  relay     http://$ADMIN_ADDR/metrics   (logs: .run/relay.log)
  token     $TOKEN
            (development only: subject dev-admin, roles super_admin (system
            config), topup.admin and devices.admin (the examples' admins: any
            order, any device), 12h)

  # read the relay's system config
  curl -H "Authorization: Bearer $TOKEN" 'http://$HTTP_ADDR/api/v1/system-configs?module=relay'

  Data: database $DB_NAME, Redis DB $REDIS_DB (set DB_NAME / REDIS_DB to change them).
  Reset: dropdb -h 127.0.0.1 -p $PGPORT -U postgres --force $DB_NAME && redis-cli -h 127.0.0.1 -p $REDIS_PORT -n $REDIS_DB flushdb

MSG
# The reference domains' examples, while examples/ exists (make remove-examples).
if [ -d examples ]; then
  cat <<MSG
  agent     $AGENT_TOKEN
            (development only: subject dev-agent, roles topup.agent and devices.agent, 12h: tops up
            its own wallet, assigns devices to itself; other roles get 403)

  # create a top-up (idempotent: paste it again and the same X-Request-ID
  # replays the first answer, header Idempotent-Replayed: true; change the id
  # for a new top-up)
  curl -i -X POST -H "Authorization: Bearer $AGENT_TOKEN" -H 'Content-Type: application/json' \\
       -H 'X-Request-ID: dev-topup-0001' -d '{"amount_cents":1000,"channel":"wechat"}' \\
       'http://$HTTP_ADDR/api/v1/topups'

  # a moment later the relay has delivered topup.created: the wallet is credited
  curl -H "Authorization: Bearer $AGENT_TOKEN" 'http://$HTTP_ADDR/api/v1/wallets/me'

  # upload a device-assignment CSV (a five-state task). device_sn must be
  # 8-32 upper-case letters or digits; target_agent_id 1-64 letters, digits,
  # _ or -. An agent assigns only to itself (dev-agent) and only devices
  # nobody else holds; the admin token may assign any device to anyone.
  # The third row is rejected (lower case) and listed as a failure.
  printf 'device_sn,target_agent_id\\nSN00000001,dev-agent\\nSN00000002,dev-agent\\nsn-bad,dev-agent\\n' >devices.csv
  curl -H "Authorization: Bearer $AGENT_TOKEN" -H 'X-Request-ID: dev-devices-0001' \\
       -F file=@devices.csv 'http://$HTTP_ADDR/api/v1/device-assignments'
  # poll the task_id it answered (Retry-After says when), then its failures
  curl -H "Authorization: Bearer $AGENT_TOKEN" 'http://$HTTP_ADDR/api/v1/device-assignments/TASK_ID'
  curl -H "Authorization: Bearer $AGENT_TOKEN" 'http://$HTTP_ADDR/api/v1/device-assignments/TASK_ID/failures'

MSG
fi
cat <<MSG
  # tracing (OpenTelemetry): $( [ -n "${OTEL_EXPORTER_OTLP_ENDPOINT:-}${OTEL_EXPORTER_OTLP_TRACES_ENDPOINT:-}" ] && echo "on, exporting to ${OTEL_EXPORTER_OTLP_ENDPOINT:-$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}" || echo "off; to enable, point the apps at an OTLP/HTTP collector:" )
  #   OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 make run   (docs/monitoring.md: Tracing)

  Ctrl-C stops the api, the relay and anything this command started.
MSG

RUN_READY_FILE=${RUN_READY_FILE:-}
if [ -n "$RUN_READY_FILE" ]; then echo ready > "$RUN_READY_FILE"; fi
# Ctrl-C runs the trap above. Getting here means the api or the relay
# stopped on its own: say which, and why.
code=0
wait -n "${started_pids[@]}" || code=$?
for target in "api $api_pid $RUN/api.log" "relay $relay_pid $RUN/relay.log"; do
  read -r name pid log <<<"$target"
  if ! kill -0 "$pid" 2>/dev/null; then
    say "$name stopped by itself (code $code); its last log lines ($log):"
    tail -n 5 "$log" | sed 's/^/    /'
  fi
done
exit 1
