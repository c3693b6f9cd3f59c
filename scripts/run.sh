#!/usr/bin/env bash
# run.sh: one command to run the template locally (make run).
#
# It makes sure Postgres and Redis answer (reusing running servers; else
# `docker compose` when a Docker engine answers; else Debian's packages
# started in a project-local data directory under .run/), applies the
# migrations, starts apps/api and apps/relay, and prints the API address, a
# development token and curl examples. Ctrl-C stops everything it
# started, and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUN=$ROOT/.run
mkdir -p "$RUN" "$ROOT/bin"

HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:8080}
ADMIN_ADDR=${ADMIN_ADDR:-127.0.0.1:9090}
PGPORT=${PGPORT:-5432}
REDIS_PORT=${REDIS_PORT:-6379}
DB_NAME=${DB_NAME:-july_dev}
LOG_LEVEL=${LOG_LEVEL:-info}

say() { printf '\033[1mrun:\033[0m %s\n' "$*"; }
started_pids=()
started_pg_dir=""
started_compose=""

cleanup() {
  trap - INT TERM EXIT
  say "stopping what this command started"
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
trap 'cleanup; exit 0' INT TERM

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
    docker compose -f deploy/docker-compose.yml up -d postgres redis
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

ensure_postgres
ensure_redis

sql -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'" | grep -q 1 \
  || sql -qc "CREATE DATABASE $DB_NAME"

export DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/$DB_NAME?sslmode=disable"
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
export LOG_LEVEL HTTP_ADDR ADMIN_ADDR
if [ ! -s "$RUN/dev-jwt-secret" ]; then head -c 48 /dev/urandom | base64 | tr -d '\n' > "$RUN/dev-jwt-secret"; fi
AUTH_JWT_SECRET=$(cat "$RUN/dev-jwt-secret")
export AUTH_JWT_SECRET

say "building bin/api bin/relay bin/migrate"
go build -o bin/ ./apps/api ./apps/relay ./apps/migrate

say "release step: migrate check && migrate up"
bin/migrate check >/dev/null || { bin/migrate check; exit 1; }
bin/migrate up
bin/migrate backfill seed-system-config >/dev/null

bin/relay >"$RUN/relay.log" 2>&1 &
started_pids+=($!)
bin/api >"$RUN/api.log" 2>&1 &
started_pids+=($!)

for url in "http://$HTTP_ADDR/readyz" "http://$ADMIN_ADDR/readyz"; do
  ok=""
  for _ in $(seq 1 60); do
    if curl -fsS "$url" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.5
  done
  [ -n "$ok" ] || { say "$url did not become ready; see $RUN/api.log and $RUN/relay.log"; exit 1; }
done

TOKEN=$(bin/api token --sub dev-admin --roles super_admin --ttl 12h)
cat <<MSG

  API       http://$HTTP_ADDR   (logs: .run/api.log)
  relay     http://$ADMIN_ADDR/metrics   (logs: .run/relay.log)
  token     $TOKEN
            (development only: subject dev-admin, role super_admin, 12h)

  # read the relay's system config
  curl -H "Authorization: Bearer $TOKEN" 'http://$HTTP_ADDR/api/v1/system-configs?module=relay'

  # create a top-up (idempotent: a retry with the same X-Request-ID replays it)
  curl -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
       -H "X-Request-ID: dev-topup-\$(date +%s)" -d '{"amount_cents":1000,"channel":"wechat"}' \\
       'http://$HTTP_ADDR/api/v1/topups'

  # a moment later the relay has delivered topup.created: the wallet is credited
  curl -H "Authorization: Bearer $TOKEN" 'http://$HTTP_ADDR/api/v1/wallets/me'

  # tracing (OpenTelemetry): $( [ -n "${OTEL_EXPORTER_OTLP_ENDPOINT:-}${OTEL_EXPORTER_OTLP_TRACES_ENDPOINT:-}" ] && echo "on, exporting to ${OTEL_EXPORTER_OTLP_ENDPOINT:-$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}" || echo "off; to enable, point the apps at an OTLP/HTTP collector:" )
  #   OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 make run   (README: Tracing)

  Ctrl-C stops the api, the relay and anything this command started.
MSG

RUN_READY_FILE=${RUN_READY_FILE:-}
if [ -n "$RUN_READY_FILE" ]; then echo ready > "$RUN_READY_FILE"; fi
wait -n "${started_pids[@]}" || true
say "a process exited; see .run/*.log"
