#!/usr/bin/env bash
# ensure-services.sh makes sure PostgreSQL and Redis answer on 127.0.0.1 for
# tests and local runs, and that promtool (make alerts) is installed. It reuses running servers, starts stopped ones, and on
# a machine without them installs Debian's packages first. It never stops or
# reconfigures a server it did not install.
set -euo pipefail

PGHOST=${PGHOST:-127.0.0.1}
PGPORT=${PGPORT:-5432}
REDIS_PORT=${REDIS_PORT:-6379}

log() { printf 'ensure-services: %s\n' "$*" >&2; }

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    log "must install or start $1 but not running as root; start $1 on 127.0.0.1 yourself, or run as root"
    exit 1
  fi
}

installed_pg=0
if ! pg_isready -q -h "$PGHOST" -p "$PGPORT" 2>/dev/null; then
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    need_root PostgreSQL
    log "installing postgresql from Debian packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    installed_pg=1
  fi
  ver=$(ls /etc/postgresql | sort -V | tail -1)
  if [ "$installed_pg" = 1 ]; then
    # A fresh cluster only trusts peers on the socket; tests connect over TCP
    # as postgres without a password, as on the development machines.
    hba=/etc/postgresql/$ver/main/pg_hba.conf
    printf 'host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n' | cat - "$hba" > "$hba.new" && mv "$hba.new" "$hba"
    chown postgres:postgres "$hba"
  fi
  log "starting postgresql $ver"
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
  for _ in $(seq 1 30); do pg_isready -q -h "$PGHOST" -p "$PGPORT" && break; sleep 1; done
  pg_isready -q -h "$PGHOST" -p "$PGPORT" || { log "postgresql did not come up on $PGHOST:$PGPORT"; exit 1; }
fi

if ! redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then
  if ! command -v redis-server >/dev/null 2>&1; then
    need_root Redis
    log "installing redis-server from Debian packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  log "starting redis-server on 127.0.0.1:$REDIS_PORT"
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 30); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.5; done
  redis-cli -p "$REDIS_PORT" ping >/dev/null || { log "redis did not come up on 127.0.0.1:$REDIS_PORT"; exit 1; }
fi
if ! command -v promtool >/dev/null 2>&1; then
  need_root promtool
  # Debian's prometheus package ships promtool; the server it also installs
  # is not started here.
  log "installing promtool (prometheus) from Debian packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
log "postgresql and redis are up; promtool is installed"
