#!/usr/bin/env bash
# dr-reset-redis.sh deletes what the service keeps in Redis, after a
# database restore and before the relays start again (docs/dr.md, restore
# runbook step 7): the queue's keys, which describe events and consumer
# effects the restore took back, and the config cache, which may be newer
# than the restored rows. The relays rebuild the queue from Postgres when
# they start; the cache fills again on reads. Stop every relay first.
#
#   REDIS_URL=redis://host:port/db scripts/dr-reset-redis.sh [QUEUE]
#
# QUEUE is the relays' ASYNQ_QUEUE (default: $ASYNQ_QUEUE, else
# "default"). REDIS_URL is a redis:// (or rediss://) URL of the node that
# holds the keys: behind Sentinel the current master; in a Cluster run it
# once per master (the queue's keys live on the master of its hash slot,
# the cache's keys on every master). It deletes nothing else (never
# FLUSHDB: other services may share the instance) and fails when a key it
# should have deleted is still there.
set -euo pipefail

log() { printf 'dr-reset-redis: %s\n' "$*" >&2; }

url=${REDIS_URL:-}
case $url in
  redis://* | rediss://*) ;;
  *) log "set REDIS_URL to the redis:// URL of the node that holds the keys (a Sentinel or Cluster URL will not do: see the header)"; exit 2 ;;
esac
queue=${1:-${ASYNQ_QUEUE:-default}}
command -v redis-cli >/dev/null || { log "redis-cli is missing (Debian: apt-get install redis-tools)"; exit 1; }

for pattern in "asynq:{$queue}:*" 'sysconfig:*'; do
  deleted=$(redis-cli -u "$url" --scan --pattern "$pattern" |
    xargs -r -d '\n' -n 500 redis-cli -u "$url" UNLINK | awk '{ n += $1 } END { print n + 0 }')
  left=$(redis-cli -u "$url" --scan --pattern "$pattern" | wc -l)
  if [ "$left" -ne 0 ]; then
    log "$left keys matching $pattern are still there (is a relay still running?)"
    exit 1
  fi
  log "deleted $deleted keys matching $pattern"
done
