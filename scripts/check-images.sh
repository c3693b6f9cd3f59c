#!/usr/bin/env bash
# check-images.sh proves the deployment files work, offline, on a Docker
# engine (run it through scripts/container-env.sh run, which provides one and
# the base images):
#
#  1. deploy/Dockerfile builds the three images with the classic builder and
#     with BuildKit, from a copy of the tree with the modules vendored in
#     (GOPROXY=off: nothing is fetched); each runs as nonroot and is small;
#  2. from those images, against containerised Postgres and Redis: migrate
#     check (on an empty database), up, the config seed, check again (nothing
#     pending), then api and relay answer /readyz and stop cleanly on SIGTERM;
#  3. deploy/docker-compose.yml (Debian's docker-compose) comes up with every
#     one-shot step exiting 0, api answers /readyz, and `down -v` leaves
#     nothing behind.
#
# Host ports are picked free, so the host's own Postgres/Redis/api may run.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${DOCKER_HOST:?run this through scripts/container-env.sh run scripts/check-images.sh}"
MAX_IMAGE_MB=${MAX_IMAGE_MB:-60}
# The BuildKit build needs a client with BuildKit built in: Debian's docker.io
# 20.10 CLI has it; newer CLIs need the buildx plugin, which Debian 12 lacks.
BUILDKIT_CLI=${BUILDKIT_CLI:-/usr/bin/docker}

say() { printf 'check-images: %s\n' "$*" >&2; }
die() { say "FAIL: $*"; exit 1; }

id=july-check-$$
ctx=$(mktemp -d "/tmp/$id.XXXX")
cleanup() {
  docker rm -fv "$id-api" "$id-relay" "$id-pg" "$id-redis" >/dev/null 2>&1 || true
  docker network rm "$id" >/dev/null 2>&1 || true
  if [ -f "$ctx/deploy/docker-compose.yml" ]; then
    (cd "$ctx" && docker-compose -p "$id" -f deploy/docker-compose.yml down -v --remove-orphans >/dev/null 2>&1) || true
  fi
  rm -rf "$ctx" "$ctx.log"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# readyz URL: waits up to 60s for 200.
readyz() {
  for _ in $(seq 1 120); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1" 2>/dev/null)" = 200 ] && return 0
    sleep 0.5
  done
  return 1
}

# --- 1. build --------------------------------------------------------------
t0=$SECONDS
COMMIT=$(git rev-parse HEAD) # stamped into the binaries; --version must name it
git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$ctx"
(cd "$ctx" && GOWORK=off GOFLAGS=-mod=mod go mod vendor)
say "build context with vendored modules: $((SECONDS - t0))s"

build() { # builder-name cli env... -- tag-suffix
  local name=$1 cli=$2 kit=$3 sfx=$4 t=$SECONDS app
  # Classic: the build stage is tagged too, so `docker image prune` keeps its
  # compiled dependencies; BuildKit keeps them in its own cache.
  local targets="migrate relay api"
  [ "$kit" = 1 ] || targets="build $targets"
  for app in $targets; do
    DOCKER_BUILDKIT=$kit "$cli" build --force-rm -f "$ctx/deploy/Dockerfile" --build-arg GOPROXY=off \
      --build-arg VERSION=check --build-arg VCS_REF="$COMMIT" --target "$app" -t "template-$app:$sfx" "$ctx" >"$ctx.log" 2>&1 ||
      { tail -30 "$ctx.log" >&2; die "$name build of $app failed; the end of its output is above"; }
  done
  say "$name build: $((SECONDS - t))s"
}
build classic docker 0 dev
build BuildKit "$BUILDKIT_CLI" 1 buildkit

for sfx in dev buildkit; do
  for app in migrate relay api; do
    img=template-$app:$sfx
    user=$(docker image inspect -f '{{.Config.User}}' "$img")
    [ "$user" = nonroot:nonroot ] || die "$img runs as \"$user\", want nonroot:nonroot"
    mb=$(docker image inspect -f '{{.Size}}' "$img" | awk '{print int($1/1e6)}')
    [ "$mb" -le "$MAX_IMAGE_MB" ] || die "$img is ${mb} MB, more than $MAX_IMAGE_MB MB"
    ver=$(docker run --rm --entrypoint /usr/local/bin/$app "$img" --version) ||
      die "$img: $app --version failed"
    grep -q "^revision $COMMIT\$" <<<"$ver" || die "$img: $app --version does not name commit $COMMIT: $ver"
    say "$img: ${mb} MB, user $user"
  done
done

# --- 2. the images against containerised Postgres and Redis ---------------
docker network create "$id" >/dev/null
docker run -d --name "$id-pg" --network "$id" -e POSTGRES_PASSWORD=check -e POSTGRES_DB=app postgres:15 >/dev/null
docker run -d --name "$id-redis" --network "$id" redis:7 >/dev/null
for _ in $(seq 1 60); do
  docker exec "$id-pg" pg_isready -q -h 127.0.0.1 -U postgres -d app 2>/dev/null && break
  sleep 0.5
done
docker exec "$id-pg" pg_isready -q -h 127.0.0.1 -U postgres -d app || die "postgres container not ready"
db="postgres://postgres:check@$id-pg:5432/app?sslmode=disable"

migrate() { docker run --rm --network "$id" -e DATABASE_URL="$db" template-migrate:dev "$@"; }
migrate check >/dev/null || die "migrate check on an empty database failed"
migrate up >/dev/null || die "migrate up failed"
migrate backfill seed-system-config >/dev/null || die "migrate backfill seed-system-config failed"
migrate check >/dev/null || die "migrate check after up failed"
status=$(migrate status --json) || die "migrate status failed"
grep -q '"applied":true' <<<"$status" || die "migrate status shows no applied migration: $status"
! grep -q '"applied":false' <<<"$status" || die "migrate status shows pending migrations after up: $status"

api_port=$(free_port)
relay_port=$(free_port)
docker run -d --name "$id-api" --network "$id" -p "127.0.0.1:$api_port:8080" \
  -e DATABASE_URL="$db" -e REDIS_URL="redis://$id-redis:6379/0" -e HTTP_ADDR=:8080 \
  -e AUTH_JWT_SECRET=check-only-not-a-secret-0123456789abcdef0123 template-api:dev >/dev/null
docker run -d --name "$id-relay" --network "$id" -p "127.0.0.1:$relay_port:9090" \
  -e DATABASE_URL="$db" -e REDIS_URL="redis://$id-redis:6379/0" -e ADMIN_ADDR=:9090 template-relay:dev >/dev/null
readyz "http://127.0.0.1:$api_port/readyz" || { docker logs "$id-api" 2>&1 | tail -20 >&2; die "api from its image never answered /readyz"; }
readyz "http://127.0.0.1:$relay_port/readyz" || { docker logs "$id-relay" 2>&1 | tail -20 >&2; die "relay from its image never answered /readyz"; }
for c in api relay; do
  docker stop -t 20 "$id-$c" >/dev/null
  code=$(docker inspect -f '{{.State.ExitCode}}' "$id-$c")
  [ "$code" = 0 ] || { docker logs "$id-$c" 2>&1 | tail -20 >&2; die "$c exited $code on SIGTERM, want 0"; }
done
say "images: migrate check/up/seed/check, api and relay /readyz, clean SIGTERM"
docker rm -fv "$id-api" "$id-relay" "$id-pg" "$id-redis" >/dev/null
docker network rm "$id" >/dev/null

# --- 3. compose --------------------------------------------------------------
t=$SECONDS
export POSTGRES_HOST_PORT REDIS_HOST_PORT API_HOST_PORT
POSTGRES_HOST_PORT=$(free_port) REDIS_HOST_PORT=$(free_port) API_HOST_PORT=$(free_port)
dc() { (cd "$ctx" && docker-compose -p "$id" -f deploy/docker-compose.yml "$@"); }
# The images built above carry the tags compose names, so nothing is rebuilt
# or pulled.
dc up -d --no-build >/dev/null 2>&1 || { dc logs --tail 20 >&2 || true; die "docker-compose up failed"; }
readyz "http://127.0.0.1:$API_HOST_PORT/readyz" || { dc ps >&2; dc logs --tail 20 >&2; die "compose api never answered /readyz"; }
for s in migrate-check migrate migrate-seed; do
  cid=$(dc ps -q "$s")
  code=$(docker inspect -f '{{.State.ExitCode}}' "$cid")
  [ "$code" = 0 ] || { dc logs "$s" >&2; die "compose $s exited $code"; }
done
relays=$(dc ps -q relay | wc -l)
[ "$relays" -ge 2 ] || die "compose runs $relays relay containers, want 2 (deploy.replicas)"
dc stop -t 20 >/dev/null 2>&1
for s in api relay; do
  for cid in $(dc ps -q "$s"); do
    code=$(docker inspect -f '{{.State.ExitCode}}' "$cid")
    [ "$code" = 0 ] || { dc logs "$s" >&2; die "compose $s exited $code on stop, want 0"; }
  done
done
dc down -v --remove-orphans >/dev/null 2>&1 || die "docker-compose down failed"
left=$(docker ps -aq --filter "label=com.docker.compose.project=$id"; docker volume ls -q --filter "label=com.docker.compose.project=$id"; docker network ls -q --filter "label=com.docker.compose.project=$id")
[ -z "$left" ] || die "docker-compose down left: $left"
# Keep the caches bounded: the tagged classic build stage (template-build:dev,
# whose module layer holds the compiled dependencies) stays, the stages of
# earlier trees go; BuildKit's cache is kept under 4 GB.
docker image prune -f >/dev/null
DOCKER_BUILDKIT=1 "$BUILDKIT_CLI" builder prune -f --keep-storage 4GB >/dev/null 2>&1 || true
say "compose: up healthy (/readyz), $relays relays, stop and down clean: $((SECONDS - t))s"
say "ok in $((SECONDS - t0))s"
