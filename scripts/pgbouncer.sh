#!/usr/bin/env bash
# pgbouncer.sh runs a PgBouncer in transaction mode in front of the test
# Postgres, for the pooler tests (make test-pooler) and for trying a
# service behind a pooler by hand. It installs Debian's pgbouncer package
# when the binary is missing (as root), and never touches a PgBouncer it
# did not start.
#
#   scripts/pgbouncer.sh run -- CMD...   start one, run CMD with
#                                        TEST_PGBOUNCER_URL set, stop it (by
#                                        PID, on every exit path); CMD's exit code
#   scripts/pgbouncer.sh start DIR       start one with its config, log and PID
#                                        file in DIR; prints its URL
#   scripts/pgbouncer.sh stop DIR        stop the one started in DIR (by PID)
#
# Upstream: TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres).
# Every database name is forwarded to the same server (a "*" entry), so a
# test's private database is reached through the pooler by swapping the
# host and port of its URL for the pooler's. The settings are the ones
# docs/postgres.md, "Behind a connection pooler", recommends: pool_mode = transaction,
# no ignore_startup_parameters (the apps send none but application_name),
# and PgBouncer 1.18's lack of prepared-statement support (the apps use
# the simple protocol). The listen port is a free loopback port.
set -euo pipefail

UPSTREAM=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}

log() { printf 'pgbouncer.sh: %s\n' "$*" >&2; }

ensure_installed() {
  PGBOUNCER=$(command -v pgbouncer || true)
  [ -z "$PGBOUNCER" ] && [ -x /usr/sbin/pgbouncer ] && PGBOUNCER=/usr/sbin/pgbouncer
  if [ -n "$PGBOUNCER" ]; then return; fi
  if [ "$(id -u)" -ne 0 ]; then
    log "pgbouncer is not installed and this is not root: install Debian's pgbouncer package (apt-get install pgbouncer)"
    exit 1
  fi
  log "installing pgbouncer from Debian packages"
  apt-get update -qq
  # The package would start its own service on 6432; this script runs its own.
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq pgbouncer >/dev/null
  if [ -x /usr/sbin/pgbouncer ]; then PGBOUNCER=/usr/sbin/pgbouncer; else PGBOUNCER=$(command -v pgbouncer); fi
}

# upstream_part FIELD: host, port or user of $UPSTREAM.
upstream_part() {
  local rest=${UPSTREAM#*://} userinfo="" hostport
  rest=${rest%%/*}
  rest=${rest%%\?*}
  if [[ $rest == *@* ]]; then userinfo=${rest%@*}; hostport=${rest##*@}; else hostport=$rest; fi
  case $1 in
    user) local u=${userinfo%%:*}; printf '%s' "${u:-postgres}" ;;
    host) local h=${hostport%%:*}; printf '%s' "${h:-127.0.0.1}" ;;
    port) if [[ $hostport == *:* ]]; then printf '%s' "${hostport##*:}"; else printf 5432; fi ;;
  esac
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local dir=$1 port tries=0 user runas=()
  ensure_installed
  mkdir -p "$dir"
  user=$(upstream_part user)
  if [ "$(id -u)" -eq 0 ]; then
    # PgBouncer refuses to run as root; it drops to the postgres user.
    runas=(-u postgres)
    chown postgres "$dir"
  fi
  while :; do
    port=$((20000 + RANDOM % 30000))
    port_free "$port" || continue
    cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=$(upstream_part host) port=$(upstream_part port)

[pgbouncer]
pool_mode = transaction
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
max_client_conn = 1000
default_pool_size = 20
max_db_connections = 40
server_login_retry = 1
EOF
    printf '"%s" ""\n"postgres" ""\n"root" ""\n' "$user" >"$dir/users.txt"
    [ ${#runas[@]} -gt 0 ] && chown postgres "$dir"/pgbouncer.ini "$dir"/users.txt
    rm -f "$dir/pgbouncer.pid"
    if "$PGBOUNCER" -d "${runas[@]}" "$dir/pgbouncer.ini" 2>>"$dir/start.err"; then
      for _ in $(seq 1 50); do
        if [ -s "$dir/pgbouncer.pid" ] && ! port_free "$port"; then
          printf '%s\n' "$port" >"$dir/port"
          printf 'postgres://%s@127.0.0.1:%s/postgres?sslmode=disable\n' "$user" "$port"
          return 0
        fi
        sleep 0.1
      done
    fi
    stop "$dir" 2>/dev/null || true
    tries=$((tries + 1))
    if [ "$tries" -ge 5 ]; then
      log "pgbouncer did not start; its log:"
      cat "$dir/start.err" "$dir/pgbouncer.log" >&2 2>/dev/null || true
      exit 1
    fi
  done
}

stop() {
  local dir=$1 pid
  [ -s "$dir/pgbouncer.pid" ] || return 0
  pid=$(cat "$dir/pgbouncer.pid")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pgbouncer.pid"
}

case ${1:-} in
  start) [ $# -eq 2 ] || { log "usage: $0 start DIR"; exit 2; }; start "$2" ;;
  stop) [ $# -eq 2 ] || { log "usage: $0 stop DIR"; exit 2; }; stop "$2" ;;
  run)
    shift
    [ "${1:-}" = "--" ] && shift
    [ $# -gt 0 ] || { log "usage: $0 run -- CMD..."; exit 2; }
    ensure_installed
    dir=$(mktemp -d /tmp/pgbouncer.XXXXXX)
    chmod 755 "$dir"
    trap 'stop "$dir"; rm -rf "$dir"' EXIT
    trap 'exit 130' INT TERM
    TEST_PGBOUNCER_URL=$(start "$dir")
    export TEST_PGBOUNCER_URL
    version=$("$PGBOUNCER" --version)
    log "PgBouncer $(awk 'NR == 1 {print $2}' <<<"$version") (transaction mode) at $TEST_PGBOUNCER_URL"
    set +e
    "$@"
    code=$?
    set -e
    exit "$code"
    ;;
  *) log "usage: $0 run -- CMD... | start DIR | stop DIR"; exit 2 ;;
esac
