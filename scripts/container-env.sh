#!/usr/bin/env bash
# container-env.sh gives tests a Docker engine and the images they use, with
# no image registry: the images are built from Debian packages.
#
#   scripts/container-env.sh run CMD...   engine + images, run CMD with DOCKER_HOST
#                                         set, fail if CMD left containers, volumes
#                                         or networks behind, stop what we started
#   scripts/container-env.sh up           the same without CMD; leaves the engine
#                                         running and prints `export DOCKER_HOST=...`
#   scripts/container-env.sh down         stop an engine `up` started
#   scripts/container-env.sh images       (re)build missing or outdated images
#
# Engine: one that already answers (DOCKER_HOST, /var/run/docker.sock) is
# reused and never stopped. Otherwise Debian's docker.io is installed when
# missing and a private dockerd is started on its own socket, exec-root and
# pidfile ($SOCK, $EXEC_ROOT, $PIDFILE); its data-root ($DATA_ROOT) persists,
# so the images built once are the cache for every later run on the machine.
#
# Images, each a local stand-in under the upstream tag the tests, compose and
# deploy/Dockerfile name, so the same files work unchanged where a registry
# is reachable:
#   postgres:15                                 Debian's postgresql-15, the official
#                                               image's POSTGRES_* variables
#   redis:7                                     Debian's redis-server (7.0)
#   golang:1.26-trixie                          Debian 13 minbase + this host's Go toolchain
#   gcr.io/distroless/static-debian13:nonroot   passwd/group (nonroot 65532), CA
#                                               certificates, tzdata; no shell
# The app images' bases (the last two) follow Debian 13, as upstream's
# distroless does since static-debian12's deprecation; the database
# stand-ins stay on Debian 12, whose postgresql-15 and redis 7 they are.
# A tag is built only when it is missing or is a stand-in built by another
# version of this script (label $LABEL holds the script's hash); an upstream
# image already under the tag is used as it is.
set -euo pipefail

SOCK=${JULY_DOCKER_SOCK:-/run/july-dockerd.sock}
EXEC_ROOT=${JULY_DOCKER_EXEC_ROOT:-/run/july-docker}
PIDFILE=${JULY_DOCKER_PIDFILE:-/run/july-dockerd.pid}
DATA_ROOT=${JULY_DOCKER_DATA_ROOT:-/var/lib/july-docker}
LOCK=${JULY_DOCKER_LOCK:-/run/july-containers.lock}
CACHE=${JULY_CONTAINER_CACHE:-/var/cache/july-containers}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm     # the postgres:15 and redis:7 stand-ins
APP_SUITE=trixie   # golang and distroless: the app images' bases
LABEL=org.july.template.standin

here=$(cd "$(dirname "$0")" && pwd)
# The label is the hash of the recipes (between the RECIPES markers) and of
# the Go toolchain copied into golang:1.26-trixie; editing other parts of
# the script keeps the cache.
HASH=$({ sed -n '/^# BEGIN RECIPES/,/^# END RECIPES/p' "$here/container-env.sh"; go version 2>/dev/null; } | sha256sum | cut -c1-16)

log() { printf 'container-env: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
need_root() { [ "$(id -u)" -eq 0 ] || die "$1 needs root; run as root, or start a Docker engine yourself and set DOCKER_HOST"; }

answers() { docker ${1:+-H "$1"} version --format '{{.Server.Version}}' >/dev/null 2>&1; }

install_docker() {
  command -v dockerd >/dev/null && command -v docker-compose >/dev/null && command -v debootstrap >/dev/null && return
  need_root "installing docker.io"
  log "installing docker.io, docker-compose and debootstrap from Debian packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose debootstrap >/dev/null
}

started=""
# engine sets DOCKER_HOST to an engine that answers, starting ours if needed.
engine() {
  if [ -n "${DOCKER_HOST:-}" ] && answers "$DOCKER_HOST"; then return; fi
  if command -v docker >/dev/null && answers unix:///var/run/docker.sock; then
    export DOCKER_HOST=unix:///var/run/docker.sock
    return
  fi
  install_docker
  export DOCKER_HOST=unix://$SOCK
  if answers "$DOCKER_HOST"; then return; fi # left running by `up`
  need_root "starting dockerd"
  mkdir -p "$DATA_ROOT" "$EXEC_ROOT"
  log "starting dockerd on $DOCKER_HOST (data-root $DATA_ROOT, log $EXEC_ROOT.log)"
  # setsid: the engine must not get the terminal's Ctrl-C before the cleanup
  # that stops it runs.
  setsid dockerd --host "$DOCKER_HOST" --data-root "$DATA_ROOT" --exec-root "$EXEC_ROOT" \
    --pidfile "$PIDFILE" --storage-driver overlay2 >"$EXEC_ROOT.log" 2>&1 </dev/null &
  started=$!
  for _ in $(seq 1 60); do
    answers "$DOCKER_HOST" && return
    kill -0 "$started" 2>/dev/null || { tail -20 "$EXEC_ROOT.log" >&2; die "dockerd exited; its log is above"; }
    sleep 0.5
  done
  die "dockerd did not answer on $DOCKER_HOST within 30s; see $EXEC_ROOT.log"
}

stop_engine() {
  local pid=$1
  log "stopping the dockerd this script started (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
  log "dockerd $pid did not stop within 30s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

# BEGIN RECIPES
# current TAG: 0 when TAG exists and is an upstream image or our stand-in of
# this script's version.
current() {
  local got
  got=$(docker image inspect --format "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null) || return 1
  [ -z "$got" ] || [ "$got" = "$HASH" ]
}

# minbase [SUITE] prints a directory holding a Debian minbase root
# filesystem of SUITE (default $SUITE), bootstrapping it once per script
# version.
minbase() {
  local suite=${1:-$SUITE}
  local dir=$CACHE/minbase-$suite-$HASH
  if [ ! -f "$dir/.done" ]; then
    need_root "debootstrap"
    rm -rf "$CACHE"/minbase-"$suite"-* && mkdir -p "$dir"
    log "debootstrap --variant=minbase $suite from $MIRROR"
    debootstrap --variant=minbase "$suite" "$dir" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
      { tail -20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed; its log is above"; }
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
    touch "$dir/.done"
  fi
  printf '%s\n' "$dir"
}

# with_packages DIR PKG...: copies minbase into DIR and installs PKGs there
# (no services started, no recommends), then strips caches and docs.
with_packages() {
  local dir=$1; shift
  rm -rf "$dir" && mkdir -p "$dir"
  cp -a "$(minbase)/." "$dir/"
  rm -f "$dir/.done"
  printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d" && chmod +x "$dir/usr/sbin/policy-rc.d"
  mkdir -p "$dir/etc/postgresql-common/createcluster.d"
  echo 'create_main_cluster = false' >"$dir/etc/postgresql-common/createcluster.d/no-main.conf"
  printf 'deb %s %s main\n' "$MIRROR" "$SUITE" >"$dir/etc/apt/sources.list"
  mount -t proc proc "$dir/proc"
  local rc=0
  chroot "$dir" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $*" \
    >"$dir.log" 2>&1 || rc=$?
  umount "$dir/proc"
  [ "$rc" = 0 ] || { tail -20 "$dir.log" >&2; die "installing $* failed; the log is above"; }
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/usr/share/doc/* "$dir"/usr/share/man/* \
    "$dir"/usr/sbin/policy-rc.d
}

# import DIR TAG CHANGE...: DIR as image TAG, labelled with the script hash.
import() {
  local dir=$1 tag=$2; shift 2
  local args=(--change "LABEL $LABEL=$HASH")
  for c in "$@"; do args+=(--change "$c"); done
  tar -C "$dir" --numeric-owner -c . | docker import "${args[@]}" - "$tag" >/dev/null
  log "built $tag ($(docker image inspect --format '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1e6}'))"
}

build_postgres() {
  local dir=$CACHE/postgres
  with_packages "$dir" postgresql-15
  install -m 0755 /dev/stdin "$dir/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
# The official image's contract: POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB,
# POSTGRES_HOST_AUTH_METHOD, PGDATA; arguments starting with "-" go to postgres.
set -e
case "$1" in -*) set -- postgres "$@" ;; esac
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /run/postgresql
  chown postgres:postgres "$PGDATA" /run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  user=${POSTGRES_USER:-postgres}
  method=${POSTGRES_HOST_AUTH_METHOD:-}
  [ -n "$method" ] || { [ -n "$POSTGRES_PASSWORD" ] && method=scram-sha-256 || method=trust; }
  pw=$(mktemp)
  printf '%s' "${POSTGRES_PASSWORD:-}" >"$pw"
  if [ -n "$POSTGRES_PASSWORD" ]; then set_pw="--pwfile=$pw"; else set_pw=; fi
  initdb -D "$PGDATA" -U "$user" -E UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host="$method" $set_pw >/dev/null
  rm -f "$pw"
  echo "host all all all $method" >>"$PGDATA/pg_hba.conf"
  db=${POSTGRES_DB:-$user}
  if [ "$db" != postgres ]; then
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    psql -v ON_ERROR_STOP=1 -U "$user" -d postgres -qc "CREATE DATABASE \"$db\""
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  fi
fi
[ "$1" = postgres ] && set -- "$@" -c listen_addresses='*'
exec "$@"
EOF
  import "$dir" postgres:15 \
    'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    'ENV PGDATA=/var/lib/postgresql/data' 'ENV LANG=C.UTF-8' \
    'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' 'CMD ["postgres"]' \
    'EXPOSE 5432'
  rm -rf "$dir" "$dir.log"
}

build_redis() {
  local dir=$CACHE/redis
  with_packages "$dir" redis-server
  mkdir -p "$dir/data" && chroot "$dir" chown redis:redis /data
  import "$dir" redis:7 \
    'USER redis' 'WORKDIR /data' 'EXPOSE 6379' \
    'CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]'
  rm -rf "$dir" "$dir.log"
}

build_golang() {
  local dir=$CACHE/golang goroot base
  goroot=$(go env GOROOT)
  base=$(minbase "$APP_SUITE")
  rm -rf "$dir" && mkdir -p "$dir"
  cp -a "$base/." "$dir/"
  rm -f "$dir/.done"
  mkdir -p "$dir/usr/local/go" "$dir/go"
  cp -a "$goroot/." "$dir/usr/local/go/"
  rm -rf "$dir/usr/local/go/pkg/obj" "$dir/usr/local/go/test" "$dir/usr/local/go/api"
  import "$dir" golang:1.26-trixie \
    'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    'ENV GOPATH=/go' 'ENV GOTOOLCHAIN=local' 'WORKDIR /go'
  rm -rf "$dir"
}

build_static() {
  local dir=$CACHE/static base
  base=$(minbase "$APP_SUITE")
  rm -rf "$dir" && mkdir -p "$dir"/{etc/ssl/certs,usr/share,tmp,home/nonroot,root}
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$dir/etc/group"
  cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/"
  cp -a /usr/share/zoneinfo "$dir/usr/share/" 2>/dev/null || cp -a "$base/usr/share/zoneinfo" "$dir/usr/share/"
  chmod 1777 "$dir/tmp" && chmod 700 "$dir/root"
  chown 65532:65532 "$dir/home/nonroot"
  import "$dir" gcr.io/distroless/static-debian13:nonroot \
    'USER 65532:65532' 'WORKDIR /home/nonroot' \
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt'
  rm -rf "$dir"
}

# END RECIPES

images() {
  local t0=$SECONDS built=0
  current postgres:15 || { build_postgres; built=1; }
  current redis:7 || { build_redis; built=1; }
  current golang:1.26-trixie || { build_golang; built=1; }
  current gcr.io/distroless/static-debian13:nonroot || { build_static; built=1; }
  if [ "$built" = 1 ]; then
    log "images built in $((SECONDS - t0))s"
    # The stand-ins of an older recipe (and build layers on top of them).
    # Not every label=$LABEL image: the app builds' cached stages inherit
    # the current label from golang:1.26-trixie.
    docker image prune -f --filter "label=$LABEL" --filter "label!=$LABEL=$HASH" >/dev/null
  else
    log "images cached (label $LABEL=$HASH)"
  fi
}

snapshot() {
  { docker ps -aq --no-trunc; docker volume ls -q; docker network ls -q --no-trunc; } | sort
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  run)
    [ $# -gt 0 ] || die "usage: $0 run CMD..."
    mkdir -p "$(dirname "$LOCK")"
    exec 9>"$LOCK"
    flock -n 9 || { log "another container run holds $LOCK; waiting"; flock 9; }
    engine
    trap '[ -z "$started" ] || stop_engine "$started"' EXIT
    images
    before=$(snapshot)
    rc=0
    "$@" || rc=$?
    left=$(comm -13 <(printf '%s\n' "$before") <(snapshot) | grep . || true)
    if [ -n "$left" ]; then
      log "the run left these containers/volumes/networks behind (removing them now):"
      docker ps -a --no-trunc | grep -F -f <(printf '%s\n' "$left") >&2 || true
      for id in $left; do
        docker rm -fv "$id" >/dev/null 2>&1 || docker volume rm -f "$id" >/dev/null 2>&1 ||
          docker network rm "$id" >/dev/null 2>&1 || true
      done
      [ "$rc" != 0 ] || rc=1
    fi
    exit "$rc"
    ;;
  up)
    engine
    images
    [ -z "$started" ] || log "dockerd keeps running; stop it with: $0 down"
    printf 'export DOCKER_HOST=%s\n' "$DOCKER_HOST"
    ;;
  down)
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      stop_engine "$(cat "$PIDFILE")"
    else
      log "no dockerd of ours is running"
    fi
    ;;
  images)
    engine
    trap '[ -z "$started" ] || stop_engine "$started"' EXIT
    images
    ;;
  *) die "usage: $0 run CMD... | up | down | images" ;;
esac
