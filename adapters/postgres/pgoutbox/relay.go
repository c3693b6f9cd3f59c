package pgoutbox

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// asyncCommit is a condition whose evaluation turns synchronous_commit
// off for the statement's own transaction (set_config(..., true) is SET
// LOCAL): the commit then does not wait for the WAL flush. An uncorrelated
// subquery, Postgres evaluates it once, before any row (a one-time
// filter). It is part of the statement, not a session setting, so it
// needs no extra round trip, works in any query protocol and through a
// pooler in transaction mode, and leaves the session as it found it.
const asyncCommit = "(SELECT set_config('synchronous_commit', 'off', true)) = 'off'"

// asyncAnd and asyncWhere mark where a lease holder's write (and
// RecordConsumed) adds asyncCommit when Config.AsynchronousCommit is set
// ("WHERE" asyncAnd "cond": a conjunct; asyncWhere: a WHERE clause of its
// own); newQueries replaces or removes them.
const (
	asyncAnd   = "/*async_commit AND*/ "
	asyncWhere = " /*async_commit WHERE*/"
)

// queries are a Store's statements with or without asyncCommit.
type queries struct {
	claim, complete, fail, renew, release, recover, park, parkDelayed, consumed, consumedWake string
}

func newQueries(async bool) queries {
	and, where := "", ""
	if async {
		and, where = asyncCommit+" AND ", " WHERE "+asyncCommit
	}
	f := func(q string) string {
		return strings.NewReplacer(asyncAnd, and, asyncWhere, where).Replace(q)
	}
	return queries{claim: f(claimSQL), complete: f(completeSQL), fail: f(failSQL), renew: f(renewSQL),
		release: f(releaseSQL), recover: f(recoverSQL), park: f(parkSQL), parkDelayed: f(parkDelayedSQL), consumed: f(consumedSQL), consumedWake: f(consumedWakeSQL)}
}

// Column widths of tb_outbox_event that Fail writes; longer values are cut
// rather than failing the whole batch.
const (
	maxErrorCodeLen    = 64
	maxErrorMessageLen = 512
)

// claimSQL locks the due rows with SKIP LOCKED, so concurrent relays split
// the backlog instead of queueing behind each other, then leases them in
// the same statement. MATERIALIZED keeps the LIMIT and the locks in one
// evaluated set. An ordered row is due only when its aggregate has no
// earlier unfinished ordered event (readySQL).
//
// The byte budget (Config.ClaimBytes) keeps the prefix of the locked
// rows, in claim order, whose payload text sums to at most it, the first
// row always; the others stay Pending for the next claim.
const claimSQL = `WITH locked AS MATERIALIZED (
	SELECT id, next_attempt_at, octet_length(o.payload::text) AS size FROM tb_outbox_event AS o
	WHERE status = 1 AND next_attempt_at <= ? AND (NOT o.ordered OR ` + readySQL + `)
	ORDER BY next_attempt_at, id
	LIMIT ?
	FOR UPDATE SKIP LOCKED
), due AS MATERIALIZED (
	SELECT id FROM (
		SELECT id, sum(size) OVER (ORDER BY next_attempt_at, id) AS upto, size FROM locked
	) AS w WHERE upto = size OR upto <= ?::bigint
)
UPDATE tb_outbox_event AS e
SET status = 2, lease_owner = ?, lease_token = e.lease_token + 1, lease_expires_at = ?, updated_at = ?
FROM due WHERE ` + asyncAnd + `e.id = due.id
RETURNING ` + claimColumns

// readySQL is the ordering rule (outbox.NewParams.Ordered) for the
// ordered row o: its predecessor, the previous ordered row of the same
// aggregate by id (one backward probe of ix_outbox_event_ordered), is
// gone (purged) or Delivered with a consumption record. Only the
// predecessor is read: it could not have been delivered before its own
// predecessor was consumed, so the rule holds down the whole chain. A
// Failed predecessor, or one whose consumer failed for good, blocks its
// aggregate until the audited replay delivers it and a consumer succeeds;
// other aggregates and unordered rows are not held. The memory store's
// Claim states the same rule in Go; contracttests.RunOutboxStore holds
// the two together.
const readySQL = `NOT EXISTS (
		SELECT 1 FROM (
			SELECT p.status, p.event_id FROM tb_outbox_event AS p
			WHERE p.ordered AND p.aggregate_type = o.aggregate_type AND p.aggregate_id = o.aggregate_id AND p.id < o.id
			ORDER BY p.id DESC LIMIT 1
		) AS prev
		WHERE prev.status <> 3 OR NOT EXISTS (SELECT 1 FROM tb_outbox_consumption AS c WHERE c.event_id = prev.event_id))`

// claimColumns are what a claimed event needs beyond what the claim itself
// set (status, lease, updated_at) and what a Delivering row cannot have
// (delivered_at), in claimedRow.scan's order. Naming them instead of e.*
// and scanning them by position costs about a fifth of reflecting all 29
// columns into outboxRow.
const claimColumns = `e.id, e.event_id, e.event_type, e.payload_version, e.aggregate_type, e.aggregate_id,
	e.resource_type, e.resource_id, coalesce(e.business_key, ''), e.request_id, e.correlation_id,
	e.payload, e.retry_count, e.next_attempt_at, e.lease_token,
	coalesce(e.last_error_code, ''), coalesce(e.last_error_message, ''), e.created_at,
	coalesce(e.trace_parent, ''), coalesce(e.trace_state, ''), e.not_before, e.ordered`

// heldSQL is the guard every write by a lease holder repeats: the row is
// still Delivering, leased to this owner under this claim's token. It,
// liveSQL, claimSQL and releaseSQL are the SQL form of the lease rules
// that core/lease and core/outbox (lifecycle.go, lease.go) state in Go and
// adapters/memory runs; contracttests.RunOutboxStore runs against both
// stores and holds them together, so change both.
const heldSQL = `e.id = r.id AND e.status = 2 AND e.lease_owner = ? AND e.lease_token = r.token`

// liveSQL adds "and the lease has not run out" (lease.Lease.Check).
const liveSQL = heldSQL + ` AND e.lease_expires_at > ?`

const completeSQL = `UPDATE tb_outbox_event AS e
SET status = 3, delivered_at = ?, updated_at = ?, lease_owner = NULL, lease_expires_at = NULL
FROM unnest(?::bigint[], ?::bigint[]) AS r(id, token)
WHERE ` + asyncAnd + liveSQL + `
RETURNING e.id`

const failSQL = `UPDATE tb_outbox_event AS e
SET status = r.status, next_attempt_at = r.next_at, retry_count = r.retries,
	last_error_code = NULLIF(r.code, ''), last_error_message = NULLIF(r.msg, ''),
	updated_at = ?, lease_owner = NULL, lease_expires_at = NULL
FROM unnest(?::bigint[], ?::bigint[], ?::smallint[], ?::timestamptz[], ?::int[], ?::text[], ?::text[])
	AS r(id, token, status, next_at, retries, code, msg)
WHERE ` + asyncAnd + liveSQL + `
RETURNING e.id`

const renewSQL = `UPDATE tb_outbox_event AS e
SET lease_expires_at = ?, updated_at = ?
FROM unnest(?::bigint[], ?::bigint[]) AS r(id, token)
WHERE ` + asyncAnd + liveSQL + `
RETURNING e.id`

// releaseSQL has no expiry check: lease.Lease.Release allows handing back
// an expired lease as long as nobody took over (the token still matches).
const releaseSQL = `UPDATE tb_outbox_event AS e
SET status = 1, next_attempt_at = ?, updated_at = ?, lease_owner = NULL, lease_expires_at = NULL
FROM unnest(?::bigint[], ?::bigint[]) AS r(id, token)
WHERE ` + asyncAnd + heldSQL + `
RETURNING e.id`

// recoverSQL locks the victims in a materialized CTE so LIMIT bounds the
// rows changed: a plain "id IN (SELECT ... LIMIT)" may be re-evaluated and
// touch more. The SET repeats outbox.Policy.OnLeaseExpired (applied by
// outbox.Recover, which the memory store calls); change both together. A
// lost lease is a failed attempt: attempts = retry_count+1 (a negative
// count read as 0); at the budget the row is Failed with next_attempt_at =
// now, otherwise Pending after Backoff.Delay(attempts, random()): with c the
// ceiling for that attempt (outbox.Backoff.Ceiling, computed in Go and
// passed as an array indexed by attempt, its last entry standing for every
// later one), c - c/2 plus a random share of c/2, in nanoseconds. Each row
// draws its own random(). contracttests.RunOutboxStore
// (RecoverExpired/...) holds this and the Go rule together.
const recoverSQL = `WITH expired AS MATERIALIZED (
	SELECT id, greatest(retry_count, 0) + 1 AS attempts FROM tb_outbox_event
	WHERE status = 2 AND lease_expires_at <= ?
	ORDER BY lease_expires_at
	LIMIT ?
	FOR UPDATE SKIP LOCKED
), decided AS (
	SELECT id, attempts, attempts >= ? AS final, (?::bigint[])[least(attempts, ?)] AS ceiling_ns
	FROM expired
)
UPDATE tb_outbox_event AS e
SET status = CASE WHEN d.final THEN 4 ELSE 1 END,
	retry_count = d.attempts,
	next_attempt_at = CASE WHEN d.final THEN ?::timestamptz
		ELSE ?::timestamptz + make_interval(secs => ((d.ceiling_ns - d.ceiling_ns / 2) + floor(random() * (d.ceiling_ns / 2))) / 1e9) END,
	last_error_code = ?, last_error_message = ?,
	updated_at = ?, lease_owner = NULL, lease_expires_at = NULL
FROM decided AS d WHERE ` + asyncAnd + `e.id = d.id
RETURNING e.id, e.event_id, e.event_type, e.status = 4, e.retry_count`

// parkSQL moves the waiting rows of stuck aggregates (stuckSQL, with the
// park cut-off for an unconsumed head) out of the claim's way. Rows
// waiting behind a head that is merely in flight are left alone: they are
// claimed as soon as it is consumed. consumedWakeSQL brings the next one
// of an aggregate back when its predecessor's consumption is recorded.
const parkSQL = stuckSQL + `, blocked AS MATERIALIZED (
	SELECT o.id FROM tb_outbox_event AS o
	JOIN stuck AS k ON o.aggregate_type = k.aggregate_type AND o.aggregate_id = k.aggregate_id
	WHERE o.status = 1 AND o.ordered AND o.next_attempt_at <= ? AND o.id > k.id
	ORDER BY o.next_attempt_at, o.id
	LIMIT ?
	FOR UPDATE OF o SKIP LOCKED
)
UPDATE tb_outbox_event AS e SET next_attempt_at = ?
FROM blocked WHERE ` + asyncAnd + `e.id = blocked.id`

// parkDelayedSQL holds the ordered rows behind a delayed one: the Pending
// ordered rows after the first delayed Pending ordered row of their
// aggregate take its not_before (they cannot go before it, so they are
// due no earlier, and Stats counts them as scheduled), lowest id first.
// A later, longer delay is taken up by the pass after the first is due.
const parkDelayedSQL = `WITH delayed AS (
	SELECT DISTINCT ON (d.aggregate_type, d.aggregate_id) d.id, d.aggregate_type, d.aggregate_id, d.not_before
	FROM tb_outbox_event AS d WHERE d.status = 1 AND d.ordered AND d.not_before > ?
	ORDER BY d.aggregate_type, d.aggregate_id, d.id
), behind AS MATERIALIZED (
	SELECT o.id, d.not_before FROM tb_outbox_event AS o
	JOIN delayed AS d ON o.aggregate_type = d.aggregate_type AND o.aggregate_id = d.aggregate_id
	WHERE o.status = 1 AND o.ordered AND o.id > d.id AND (o.not_before IS NULL OR o.not_before < d.not_before)
	ORDER BY o.id
	LIMIT ?
	FOR UPDATE OF o SKIP LOCKED
)
UPDATE tb_outbox_event AS e SET not_before = b.not_before, next_attempt_at = greatest(e.next_attempt_at, b.not_before)
FROM behind AS b WHERE ` + asyncAnd + `e.id = b.id`

// ParkBlocked implements ports.OutboxRelayStore (see parkSQL and
// parkDelayedSQL).
func (s *Store) ParkBlocked(ctx context.Context, now, until time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("park blocked ordered events: limit %d; pass 1 or more", limit)
	}
	limit = min(limit, s.cfg.SweepLimit)
	res, err := s.db.ExecContext(ctx, s.q.park, now.Add(-ports.ParkUnconsumedAfter), now, limit, until)
	if err != nil {
		return 0, fmt.Errorf("park blocked ordered events: %w", pgerr.Translate(err))
	}
	n, err := pgerr.Affected(res)
	if err != nil || n >= limit {
		return n, err
	}
	res, err = s.db.ExecContext(ctx, s.q.parkDelayed, now, limit-n)
	if err != nil {
		return n, fmt.Errorf("park ordered events behind a delayed one: %w", pgerr.Translate(err))
	}
	m, err := pgerr.Affected(res)
	return n + m, err
}

// maxCeilings bounds the backoff ceilings recoverSQL receives: from attempt
// 64 on every ceiling is Backoff.Max (Base is at least 1ns, 2^63ns exceeds
// any Duration).
const maxCeilings = 64

// recoverCeilings returns Backoff.Ceiling(n) in nanoseconds for each
// attempt n that can still go back to Pending (1..MaxAttempts-1, at least
// one entry, at most maxCeilings).
func recoverCeilings(p outbox.Policy) []int64 {
	n := max(1, min(p.Attempts()-1, maxCeilings))
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(p.Backoff.Ceiling(i + 1))
	}
	return out
}

// Claim leases up to p.Limit due Pending rows (lowered to
// Config.ClaimLimit) to p.Owner, oldest due first. It returns an
// error wrapping lease.ErrInvalid for an empty owner or a lease length
// outside (0, lease.MaxTTL], and for a Limit below 1.
func (s *Store) Claim(ctx context.Context, p ports.ClaimParams) ([]outbox.Event, error) {
	if err := checkLease(p.Owner, p.LeaseFor); err != nil {
		return nil, fmt.Errorf("claim outbox events: %w", err)
	}
	if p.Limit < 1 {
		return nil, fmt.Errorf("claim outbox events: %w: limit %d; pass 1 or more", lease.ErrInvalid, p.Limit)
	}
	// Postgres keeps microseconds and bun writes times truncated to them;
	// the event reports what was stored.
	now := p.Now.Truncate(time.Microsecond)
	expires := p.Now.Add(p.LeaseFor).Truncate(time.Microsecond)
	limit := min(p.Limit, s.cfg.ClaimLimit)
	if c := s.cut.Load(); c > 0 {
		limit = min(limit, int(2*c))
	}
	rows, err := s.db.QueryContext(ctx, s.q.claim, p.Now, limit, s.cfg.ClaimBytes, p.Owner, expires, p.Now)
	if err != nil {
		return nil, fmt.Errorf("claim outbox events: %w", pgerr.Translate(err))
	}
	defer rows.Close()
	var (
		evs   []outbox.Event
		bytes int64
	)
	for rows.Next() {
		ev := outbox.Event{
			Status:    outbox.Delivering,
			Lease:     lease.Lease{Owner: p.Owner, ExpiresAt: expires.UTC()},
			UpdatedAt: now.UTC(),
		}
		var (
			payload   []byte
			notBefore sql.NullTime
		)
		if err := rows.Scan(&ev.ID, &ev.EventID, &ev.EventType, &ev.PayloadVersion, &ev.AggregateType, &ev.AggregateID,
			&ev.ResourceType, &ev.ResourceID, &ev.BusinessKey, &ev.RequestID, &ev.CorrelationID,
			&payload, &ev.RetryCount, &ev.NextAttemptAt, &ev.Lease.Token,
			&ev.LastErrorCode, &ev.LastErrorMessage, &ev.CreatedAt,
			&ev.TraceParent, &ev.TraceState, &notBefore, &ev.Ordered); err != nil {
			return nil, fmt.Errorf("claim outbox events: read a claimed row: %w", err)
		}
		ev.Payload = json.RawMessage(payload)
		bytes += int64(len(payload))
		ev.NextAttemptAt, ev.CreatedAt, ev.NotBefore = ev.NextAttemptAt.UTC(), ev.CreatedAt.UTC(), utcOrZero(notBefore.Time)
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim outbox events: %w", pgerr.Translate(err))
	}
	// Fewer rows than locked and most of the budget used: the budget cut it.
	if len(evs) < limit && 2*bytes > s.cfg.ClaimBytes {
		s.cut.Store(int64(len(evs)))
	} else {
		s.cut.Store(0)
	}
	// UPDATE ... RETURNING does not keep the CTE's order.
	slices.SortFunc(evs, func(a, b outbox.Event) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	return evs, nil
}

// Complete marks the rows Delivered in one UPDATE; see
// ports.OutboxRelayStore.Complete.
func (s *Store) Complete(ctx context.Context, owner string, now time.Time, refs []ports.LeaseRef) ([]int64, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if owner == "" {
		return nil, fmt.Errorf("complete outbox events: %w: owner is empty", lease.ErrInvalid)
	}
	ids, tokens := refArrays(refs)
	return s.held(ctx, "complete", refs, s.q.complete, now, now, ids, tokens, owner, now)
}

// Fail applies each item's decision in one UPDATE; see
// ports.OutboxRelayStore.Fail. A decision whose Status is neither Pending
// nor Failed fails the whole call before any write. Error codes and
// messages longer than their columns are cut.
func (s *Store) Fail(ctx context.Context, owner string, now time.Time, items []ports.FailItem) ([]int64, error) {
	if len(items) == 0 {
		return nil, nil
	}
	if owner == "" {
		return nil, fmt.Errorf("fail outbox events: %w: owner is empty", lease.ErrInvalid)
	}
	items = slices.Clone(items)
	slices.SortFunc(items, func(a, b ports.FailItem) int { return cmp.Compare(a.Ref.ID, b.Ref.ID) })
	n := len(items)
	refs := make([]ports.LeaseRef, n)
	ids, tokens, retries := make([]int64, n), make([]int64, n), make([]int, n)
	statuses, nextAt := make([]int, n), make([]time.Time, n)
	codes, msgs := make([]string, n), make([]string, n)
	for i, it := range items {
		d := it.Decision
		if d.Status != outbox.Pending && d.Status != outbox.Failed {
			return nil, fmt.Errorf("fail outbox event %d: %w", it.Ref.ID, &outbox.TransitionError{From: outbox.Delivering, To: d.Status})
		}
		refs[i], ids[i], tokens[i] = it.Ref, it.Ref.ID, it.Ref.Token
		statuses[i], nextAt[i], retries[i] = int(d.Status), cmp.Or(d.NextAttemptAt, now), max(d.RetryCount, 0)
		codes[i], msgs[i] = truncate(d.Code, maxErrorCodeLen), truncate(d.Message, maxErrorMessageLen)
	}
	return s.held(ctx, "fail", refs, s.q.fail, now,
		pgdialect.Array(ids), pgdialect.Array(tokens), pgdialect.Array(statuses), pgdialect.Array(nextAt),
		pgdialect.Array(retries), pgdialect.Array(codes), pgdialect.Array(msgs), owner, now)
}

// Renew extends live leases to now+leaseFor; see
// ports.OutboxRelayStore.Renew.
func (s *Store) Renew(ctx context.Context, owner string, now time.Time, leaseFor time.Duration, refs []ports.LeaseRef) ([]int64, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if err := checkLease(owner, leaseFor); err != nil {
		return nil, fmt.Errorf("renew outbox leases: %w", err)
	}
	ids, tokens := refArrays(refs)
	return s.held(ctx, "renew", refs, s.q.renew, now.Add(leaseFor), now, ids, tokens, owner, now)
}

// Release hands rows back as Pending due at now, keeping retry_count and
// the token; an expired lease may still be released if nobody took over.
func (s *Store) Release(ctx context.Context, owner string, now time.Time, refs []ports.LeaseRef) ([]int64, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if owner == "" {
		return nil, fmt.Errorf("release outbox leases: %w: owner is empty", lease.ErrInvalid)
	}
	ids, tokens := refArrays(refs)
	return s.held(ctx, "release", refs, s.q.release, now, now, ids, tokens, owner)
}

// RecoverExpired takes back up to p.Limit (lowered to Config.SweepLimit)
// expired Delivering rows, longest expired first, in one statement; see
// ports.OutboxRelayStore.RecoverExpired.
func (s *Store) RecoverExpired(ctx context.Context, p ports.RecoverParams) (ports.RecoverResult, error) {
	var res ports.RecoverResult
	if p.Limit < 1 {
		return res, fmt.Errorf("recover expired outbox leases: limit %d; pass 1 or more", p.Limit)
	}
	ceilings := recoverCeilings(p.Policy)
	rows, err := s.db.QueryContext(ctx, s.q.recover, p.Now, min(p.Limit, s.cfg.SweepLimit),
		p.Policy.Attempts(), pgdialect.Array(ceilings), len(ceilings), p.Now, p.Now,
		outbox.CodeLeaseExpired, truncate(outbox.LeaseExpiredMessage, maxErrorMessageLen), p.Now)
	if err != nil {
		return res, fmt.Errorf("recover expired outbox leases: %w", pgerr.Translate(err))
	}
	defer rows.Close()
	for rows.Next() {
		var f ports.RecoveredFailure
		var failed bool
		if err := rows.Scan(&f.ID, &f.EventID, &f.EventType, &failed, &f.RetryCount); err != nil {
			return ports.RecoverResult{}, fmt.Errorf("recover expired outbox leases: read a recovered row: %w", err)
		}
		if failed {
			res.Failed = append(res.Failed, f)
		} else {
			res.Requeued++
		}
	}
	if err := rows.Err(); err != nil {
		return ports.RecoverResult{}, fmt.Errorf("recover expired outbox leases: %w", pgerr.Translate(err))
	}
	slices.SortFunc(res.Failed, func(a, b ports.RecoveredFailure) int { return cmp.Compare(a.ID, b.ID) })
	return res, nil
}

// held runs one holder write and returns the refs it did not change.
func (s *Store) held(ctx context.Context, op string, refs []ports.LeaseRef, query string, args ...any) ([]int64, error) {
	var done []int64
	if err := s.db.NewRaw(query, args...).Scan(ctx, &done); err != nil {
		return nil, fmt.Errorf("%s %d outbox events: %w", op, len(refs), pgerr.Translate(err))
	}
	return lostIDs(refs, done), nil
}

// refArrays returns the ids and tokens as array arguments, sorted by id so
// concurrent batches lock shared rows in the same order.
func refArrays(refs []ports.LeaseRef) (ids, tokens any) {
	sorted := slices.Clone(refs)
	slices.SortFunc(sorted, func(a, b ports.LeaseRef) int { return cmp.Compare(a.ID, b.ID) })
	is, ts := make([]int64, len(sorted)), make([]int64, len(sorted))
	for i, r := range sorted {
		is[i], ts[i] = r.ID, r.Token
	}
	return pgdialect.Array(is), pgdialect.Array(ts)
}

// lostIDs returns the ids of refs not in done, once each, in refs order.
func lostIDs(refs []ports.LeaseRef, done []int64) []int64 {
	if len(done) == len(refs) {
		return nil
	}
	seen := make(map[int64]bool, len(refs))
	for _, id := range done {
		seen[id] = true
	}
	var lost []int64
	for _, r := range refs {
		if !seen[r.ID] {
			seen[r.ID] = true
			lost = append(lost, r.ID)
		}
	}
	return lost
}

func checkLease(owner string, ttl time.Duration) error {
	switch {
	case owner == "":
		return fmt.Errorf("%w: owner is empty", lease.ErrInvalid)
	case ttl <= 0 || ttl > lease.MaxTTL:
		return fmt.Errorf("%w: lease length %s outside (0, %s]", lease.ErrInvalid, ttl, lease.MaxTTL)
	}
	return nil
}

// truncate cuts s to at most n characters (varchar counts characters).
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
