#!/usr/bin/env bash
# check-template-update.sh proves, on every make ci of the template, that a
# service takes the template's fixes (docs/template.md). From an older
# template commit (the first with scripts/template.sh) it makes a service
# the way a team does (make new-service, examples removed), adds a one-event
# domain under domains/ wired in domains/domains.go, edits one foundation
# file (a Makefile target), commits, and runs make template-update to the
# current tree (the working tree, committed to a dangling commit). Then:
#
#   - every foundation file equals the current tree's rendering for the
#     service, except the Makefile, which holds both changes;
#   - domains/ is untouched and template.lock is at the current tree;
#   - template-status reports the Makefile as the only drift;
#   - go build, go vet and the service's make test (RACE=) pass;
#   - the same update with a planted fault (TEMPLATE_UPDATE_FAULT=drop-edit:
#     the service's edit dropped; write-domain: domains/ written) fails.
#
# Template-only (never copied into a service). The copies are removed.
set -euo pipefail

MODULE=${CHECK_MODULE:-example.com/acme/cards}
export TEST_DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
export TEST_REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/0}
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.26.10}

start=$SECONDS
log() { printf 'check-template-update: %s (%ds)\n' "$*" $((SECONDS - start)) >&2; }
die() { log "FAIL: $*"; exit 1; }

cd "$(dirname "$0")/.."
repo=$(pwd)
command -v go >/dev/null || die "the go command is not on PATH; install Go 1.26"
[ ! -f template.lock ] || die "this is a service (template.lock): the check runs in the template"

# Fill the module cache from the template (a no-op when warm) so the
# service runs with the network off.
go list -deps -test ./... >/dev/null
go mod tidy -diff >/dev/null 2>&1 || true
(cd contracttests/containers && go list -deps -test ./... >/dev/null && { go mod tidy -diff >/dev/null 2>&1 || true; })

# The current tree as a commit, without touching a ref or the index.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-template-update.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GIT_INDEX_FILE=$tmp/index
git read-tree HEAD
git add -A
tree=$(git write-tree)
unset GIT_INDEX_FILE
if [ "$tree" = "$(git rev-parse 'HEAD^{tree}')" ]; then
  target=$(git rev-parse HEAD)
else
  target=$(git -c user.name=check -c user.email=check@localhost commit-tree -p HEAD -m "check-template-update: the working tree" "$tree")
fi
added=$(git log --diff-filter=A --format=%H -- scripts/template.sh)
old=${added##*$'\n'}

svc=$tmp/cards
if [ -n "$old" ]; then
  log "a service from ${old:0:12} (the first commit with scripts/template.sh), updated to ${target:0:12}"
  git clone -q --no-checkout "$repo" "$tmp/template"
  git -C "$tmp/template" checkout -q --detach "$old"
  make -s -C "$tmp/template" new-service MODULE="$MODULE" DIR="$svc" >"$tmp/new.out" || { cat "$tmp/new.out" >&2; die "make new-service failed at ${old:0:12}"; }
else
  log "no commit has scripts/template.sh yet: the service is made from the working tree and updated to it"
  TEMPLATE_REV=$target bash scripts/template.sh new "$MODULE" "$svc" remove >"$tmp/new.out"
fi
export GOPROXY=off
[ ! -d "$svc/examples" ] || die "new-service kept examples/ (the default is remove)"
for f in bench scripts/check-template-update.sh; do [ ! -e "$svc/$f" ] || die "new-service copied the template-only $f"; done
lock=$(<"$svc/template.lock")
[[ $lock == *"module = $MODULE"* && $lock == *"examples = removed"* ]] || die "template.lock does not record the module and examples = removed:
$lock"

# The service's one-event domain.
mkdir -p "$svc/domains/pings"
cat >"$svc/domains/pings/pings.go" <<GO
// Package pings is a one-event domain: Send appends ping.sent in its
// transaction and the relay's consumer records its consumption once.
package pings

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"$MODULE/adapters/asynq/queue"
	"$MODULE/adapters/postgres/pgoutbox"
	"$MODULE/apps/domain"
	"$MODULE/core/outbox"
)

const (
	EventSent = "ping.sent"
	Consumer  = "pings-record"
)

type Sent struct {
	PingID string \`json:"ping_id"\`
}

func Domain() domain.Domain {
	return domain.Domain{Name: "domains/pings", Relay: func(d domain.RelayDeps) (domain.Relay, error) {
		record := func(ctx context.Context, env outbox.Envelope, _ Sent) error {
			_, err := Record(ctx, d.DB, env.EventID, time.Now())
			return err
		}
		return domain.Relay{Consumers: []queue.Consumer{{EventType: EventSent, Name: Consumer, Handler: queue.Handle(record)}}}, nil
	}}
}

// Send appends one ping.sent event in its transaction and returns its id.
func Send(ctx context.Context, db *bun.DB, id string, now time.Time) (string, error) {
	ev, err := outbox.New(outbox.NewParams{
		EventID: uuid.NewString(), EventType: EventSent, PayloadVersion: 1,
		AggregateType: "ping", AggregateID: id, ResourceType: "ping", ResourceID: id,
		RequestID: id, Payload: Sent{PingID: id}, Now: now,
	})
	if err != nil {
		return "", err
	}
	return ev.EventID, db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return pgoutbox.Append(ctx, tx, ev) })
}

// Record is the consumer's effect; false for a duplicate delivery.
func Record(ctx context.Context, db *bun.DB, eventID string, now time.Time) (first bool, err error) {
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		first, err = pgoutbox.RecordConsumption(ctx, tx, eventID, Consumer, now)
		return err
	})
	return first, err
}
GO
cat >"$svc/domains/pings/pings_test.go" <<GO
package pings_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"$MODULE/adapters/postgres"
	"$MODULE/contracttests/testinfra"
	"$MODULE/domains/pings"
)

func TestSendThenRecordOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	id, err := pings.Send(ctx, db, "p-1", time.Now())
	require.NoError(t, err)
	var n int
	require.NoError(t, db.NewRaw("SELECT count(*) FROM tb_outbox_event WHERE event_id = ? AND event_type = ?", id, pings.EventSent).Scan(ctx, &n))
	require.Equal(t, 1, n)
	for _, want := range []bool{true, false} {
		first, err := pings.Record(ctx, db, id, time.Now())
		require.NoError(t, err)
		require.Equal(t, want, first, "the second record is a duplicate delivery")
	}
}
GO
list=$svc/domains/domains.go
src=$(<"$list")
[[ $src == *'"'"$MODULE"'/apps/domain"'* && $src == *'return []domain.Domain{'* ]] || die "domains/domains.go has no apps/domain import or no return []domain.Domain{ to wire the domain into"
sed -i -e "s|^\(\t\"$MODULE/apps/domain\"\)\$|\1\n\t\"$MODULE/domains/pings\"|" -e 's|^\(\treturn \[\]domain.Domain{\)$|\1\n\t\tpings.Domain(),|' "$list"
gofmt -w "$list"

# The service's edit of a foundation file: a Makefile target, inserted where
# the template's own change of the Makefile leaves room (the end if it can),
# so that both changes merge. Its three lines are unique in the file.
block=("## service-check: the service's own target" "service-check:" $'\t@echo service-check')
bash scripts/template.sh render "$repo" "$target" "$MODULE" removed "$tmp/expected"
changes=$(diff "$svc/Makefile" "$tmp/expected/Makefile" || true)
at=$(awk -v changes="$changes" '
  BEGIN {
    n = split(changes, lines, "\n")
    for (i = 1; i <= n; i++) {
      if (lines[i] !~ /^[0-9]/) continue
      split(lines[i], r, /[acd]/); split(r[1], s, ","); lo = s[1]; hi = (2 in s) ? s[2] : s[1]
      if (lines[i] ~ /a/) hi = lo + 1
      for (l = lo; l <= hi; l++) touched[l] = 1
    }
  }
  { line[NR] = $0; if (!rule && $0 ~ /^[a-z][a-z-]*:/) rule = NR }
  END {
    for (p = NR; p > rule; p--) {
      if (p < NR && line[p] != "") continue
      ok = 1; for (l = p - 1; l <= p + 2; l++) if (l in touched) ok = 0
      if (ok) { print p; exit }
    }
  }' "$svc/Makefile")
[ -n "$at" ] || die "no place in the Makefile where the service's edit stays clear of the template's change"
{ head -n "$at" "$svc/Makefile"; printf '%s\n' "${block[@]}"; tail -n +"$((at + 1))" "$svc/Makefile"; } >"$tmp/Makefile"
mv "$tmp/Makefile" "$svc/Makefile"
git -C "$svc" add -A
git -C "$svc" commit -q -m "pings: a one-event domain; make service-check"
git clone -q "$svc" "$tmp/faulty" # the same service, for the planted faults

# under PATH ENTRY...: PATH is one of the entries or inside one.
under() {
  local p=$1 e
  shift
  for e in "$@"; do [[ $p == "$e" || $p == "$e"/* ]] && return 0; done
  return 1
}

# verify DIR: the assertions on an updated service; prints what fails.
verify() {
  local dir=$1 bad=() f foundation service lock
  lock=$dir/template.lock
  foundation=$(awk '$1 == "foundation" { sub(/^[^=]*= /, ""); print }' "$lock")
  service=$(awk '$1 == "service" { sub(/^[^=]*= /, ""); print }' "$lock")
  while IFS= read -r -d '' f; do
    # shellcheck disable=SC2086
    under "$f" $foundation && ! under "$f" $service || continue
    if [ "$f" = Makefile ]; then
      local kept
      kept=$(grep -cxF -e "${block[0]}" -e "${block[1]}" -e "${block[2]}" "$dir/Makefile" || true)
      [ "$kept" = 3 ] || bad+=("Makefile lost the service's target (service-check)")
      grep -vxF -e "${block[0]}" -e "${block[1]}" -e "${block[2]}" "$dir/Makefile" >"$tmp/Makefile.rest" || true
      cmp -s "$tmp/Makefile.rest" "$tmp/expected/Makefile" || bad+=("Makefile without the service's target is not the template's")
    elif [ ! -e "$dir/$f" ] && [ ! -e "$tmp/expected/$f" ]; then
      continue # deleted by the update, still in the service's index until it commits
    elif [ ! -e "$dir/$f" ]; then
      bad+=("$f is missing")
    elif [ ! -e "$tmp/expected/$f" ]; then
      bad+=("$f is not in the template")
    elif ! cmp -s "$dir/$f" "$tmp/expected/$f"; then
      bad+=("$f differs from the template's")
    fi
  done < <({ (cd "$tmp/expected" && find . -type f -printf '%P\0'); git -C "$dir" ls-files -z --cached --others --exclude-standard; } | sort -zu)
  local domains
  domains=$(git -C "$dir" status --porcelain -- domains)
  [ -z "$domains" ] || bad+=("domains/ was written: $domains")
  grep -qx "template_version = $target" "$lock" || bad+=("template.lock is not at ${target:0:12}")
  ! grep -q '^pending_' "$lock" || bad+=("template.lock has a pending update")
  [ ${#bad[@]} -eq 0 ] && return 0
  printf '  %s\n' "${bad[@]}" >&2
  return 1
}

t0=$SECONDS
make -s -C "$svc" template-update TEMPLATE="$repo" TO="$target" >"$tmp/update.out" 2>&1 || { cat "$tmp/update.out" >&2; die "make template-update failed"; }
log "template-update took $((SECONDS - t0))s: $(sed -n 's/^template-update: \(.*conflicts\)$/\1/p' "$tmp/update.out")"
verify "$svc" || die "the updated service is not the template's foundation plus its own changes (above)"
make -s -C "$svc" template-status TEMPLATE="$repo" TO="$target" >"$tmp/status.out" 2>&1 || { cat "$tmp/status.out" >&2; die "make template-status failed"; }
status=$(<"$tmp/status.out")
[[ $status == *"drift: 1 foundation files"* && $status == *"changed  Makefile"* && $status == *"template: up to date"* ]] ||
  die "template-status after the update should show the Makefile as the only drift and no newer version:
$status"

for fault in drop-edit write-domain; do
  git -C "$tmp/faulty" reset -q --hard && git -C "$tmp/faulty" clean -qfd
  if TEMPLATE_UPDATE_FAULT=$fault make -s -C "$tmp/faulty" template-update TEMPLATE="$repo" TO="$target" >"$tmp/fault.out" 2>&1 &&
    verify "$tmp/faulty" 2>"$tmp/fault.err"; then
    die "the planted fault $fault went unnoticed: the check cannot fail"
  fi
  log "planted fault $fault caught: $(tr '\n' ' ' <"$tmp/fault.err")"
done

log "go build ./... && go vet ./... in the service"
(cd "$svc" && go build ./... && go vet ./...) || die "the updated service does not build or vet"
t0=$SECONDS
log "the service's make test without the race detector (the slow part)"
# RACE=: the gate's test-full-tz runs the same foundation code with -race;
# here the question is whether the renamed service without its examples
# still builds and passes, and -race would double the time of a cold build.
make -s -C "$svc" test RACE= >"$tmp/test.out" 2>&1 </dev/null || { tail -n 80 "$tmp/test.out" >&2; die "the updated service's make test fails (the last 80 lines above)"; }
log "OK: a service from ${old:0:12} took ${target:0:12}: the foundation is the template's, its Makefile edit and domain kept, the planted faults caught; make test $((SECONDS - t0))s; in all $((SECONDS - start))s"
