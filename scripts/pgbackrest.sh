#!/usr/bin/env bash
# pgbackrest.sh makes sure pgBackRest is installed (Debian's package, as
# root, when the binary is missing) and prints its path. `make dr-drill`
# runs it first, so a fresh machine passes the drill with the README's
# commands alone; it never configures or starts anything.
#
#   scripts/pgbackrest.sh ensure   install if missing; print the binary's path
set -euo pipefail

log() { printf 'pgbackrest.sh: %s\n' "$*" >&2; }

ensure_installed() {
  local bin
  bin=$(command -v pgbackrest || true)
  [ -z "$bin" ] && [ -x /usr/bin/pgbackrest ] && bin=/usr/bin/pgbackrest
  if [ -z "$bin" ]; then
    if [ "$(id -u)" -ne 0 ]; then
      log "pgbackrest is not installed and this is not root: install Debian's pgbackrest package (apt-get install pgbackrest)"
      exit 1
    fi
    log "installing pgbackrest from Debian packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbackrest >/dev/null
    bin=$(command -v pgbackrest || echo /usr/bin/pgbackrest)
  fi
  [ -x "$bin" ] || { log "pgbackrest did not install"; exit 1; }
  printf '%s\n' "$bin"
}

case ${1:-} in
  ensure) ensure_installed ;;
  *) log "usage: $0 ensure"; exit 2 ;;
esac
