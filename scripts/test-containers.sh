#!/usr/bin/env bash
# test-containers.sh is `make test-containers` inside scripts/container-env.sh
# run (which provides DOCKER_HOST and the images). With TEST_DATABASE_URL and
# TEST_REDIS_URL unset it runs
#  1. the contracttests/containers module: the suites in-process, their
#     Postgres and Redis started by dockertest on first use (containers.Run);
#  2. the contract suites and every adapter's tests, through
#     cmd/withcontainers: dockertest starts Postgres and Redis containers, the
#     tests get their URLs, the containers are removed afterwards;
#  3. scripts/check-images.sh: the three images built offline (classic and
#     BuildKit), run against containers, and docker-compose up/down.
# All three run side by side: the test runs mostly wait (lease expiries,
# outage bounds), the image builds mostly compute. Without -race: the
# gate's test-full-tz runs the same tests with it; here the question is the
# container wiring.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DOCKER_HOST:?run this through scripts/container-env.sh run}"
for v in TEST_DATABASE_URL TEST_REDIS_URL; do
  [ -z "${!v:-}" ] || { echo "test-containers: $v is set; unset it (env -u $v)" >&2; exit 2; }
done
GO=${GO:-go}
PKGS=${CONTAINER_PKGS:-./adapters/... ./contracttests/...}
log=$(mktemp /tmp/check-images.XXXX.log)
trap 'rm -f "$log"' EXIT

t0=$SECONDS
mkdir -p bin
$GO build -o bin/withcontainers ./contracttests/containers/cmd/withcontainers
./scripts/check-images.sh >"$log" 2>&1 &
images=$!
(cd contracttests/containers && $GO test -count=1 -timeout 15m ./...) &
inproc=$!
rc=0
# shellcheck disable=SC2086 # PKGS is a list of patterns
# The Redis topology tests start their own Redis processes and ran in the
# main test run already; under the image builds' load here they would only
# be slower copies (-skip), since they use no container.
bin/withcontainers $GO test -count=1 -timeout 20m -skip 'TestTopologies|TestPublisherOnTopologies|FailoverDuringDrain|TestSentinelFailoverIsFollowed' $PKGS || rc=$?
wait "$inproc" || rc=$?
echo "test-containers: suites and adapters against containers: $((SECONDS - t0))s" >&2
irc=0
wait "$images" || irc=$?
cat "$log" >&2
echo "test-containers: total (images and compose included) $((SECONDS - t0))s" >&2
[ "$rc" = 0 ] || exit "$rc"
exit "$irc"
