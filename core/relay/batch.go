package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// RunOnce claims one batch for owner, publishes it and marks the outcome.
// It returns how many rows it claimed. Once rows are claimed the batch is
// finished even if ctx is cancelled (bounded by Config.StopTimeout), so a
// graceful stop never strands a lease.
func (r *Relay) RunOnce(ctx context.Context, owner string) (int, error) {
	if ctx.Err() != nil {
		return 0, nil //nolint:nilerr // a stopping relay claims nothing; not a failure
	}
	ctx = context.WithoutCancel(ctx)
	b, err := r.claim(ctx, owner)
	if err != nil || len(b.Events) == 0 {
		return 0, err
	}
	return len(b.Events), r.finish(ctx, b)
}

// claim leases the next batch. ctx is the caller's detached context (the
// loops' stop budget): a statement cancelled mid-flight may still commit
// its leases, and those rows must then be finished, not stranded until
// their lease expires.
func (r *Relay) claim(ctx context.Context, owner string) (ClaimedBatch, error) {
	cfg := r.tuned()
	start := r.clock.Now()
	events, err := r.store.Claim(ctx, ports.ClaimParams{
		Owner: owner, Limit: cfg.BatchSize, LeaseFor: cfg.LeaseFor, Now: start,
	})
	if err != nil {
		return ClaimedBatch{}, fmt.Errorf("claim outbox batch: %w", err)
	}
	if co, ok := r.opts.Observer.(ClaimObserver); ok {
		co.Claim(len(events), cfg.BatchSize)
	}
	return ClaimedBatch{Owner: owner, ClaimStart: start, ClaimEnd: r.clock.Now(), Events: events}, nil
}

// finish publishes claimed events and marks them, in one write per outcome.
// ctx is detached from the stop (finishing the batch is what keeps
// at-least-once cheap); the loops' one is cancelled StopTimeout after
// Stop, a budget every batch still finishing shares.
func (r *Relay) finish(ctx context.Context, b ClaimedBatch) (err error) {
	fctx, cancel := context.WithTimeout(ctx, r.cfg.StopTimeout)
	defer cancel()
	owner, events := b.Owner, b.Events
	res := BatchResult{Claimed: len(events)}
	if r.opts.Tracer != nil {
		var end func(BatchResult, error)
		fctx, end = r.opts.Tracer.StartBatch(fctx, b)
		defer func() { end(res, err) }()
	}

	envs := make([]outbox.Envelope, len(events))
	for i, ev := range events {
		envs[i] = ev.Envelope()
	}
	errs := r.pub.Publish(fctx, envs)

	var done []ports.LeaseRef
	var doneAt []time.Time // due time (DueAt) of done[i]
	var doneTrace []string // trace_parent of done[i]
	var failed []ports.FailItem
	unavailable := 0
	now := r.clock.Now()
	for i, ev := range events {
		ref := ports.LeaseRef{ID: ev.ID, Token: ev.Lease.Token}
		var perr error
		if i < len(errs) {
			perr = errs[i]
		} else {
			perr = outbox.Transient("PUBLISH_RESULT_MISSING", "publisher returned fewer results than envelopes")
		}
		if perr == nil {
			done = append(done, ref)
			doneAt = append(doneAt, ev.DueAt())
			doneTrace = append(doneTrace, ev.TraceParent)
			continue
		}
		if errors.Is(perr, ports.ErrUnavailable) {
			unavailable++
		}
		policy := r.policy()
		d := policy.OnFailure(ev.RetryCount, perr, now, r.opts.RandFunc())
		if d.Final && d.Class == outbox.ClassTransient && errors.Is(perr, ports.ErrUnavailable) {
			// An unreachable queue is not the event's fault: keep backing
			// off (capped by Policy.Backoff.Max) instead of failing it for good.
			d.Status, d.Final = outbox.Pending, false
			d.NextAttemptAt = now.Add(policy.Backoff.Delay(d.RetryCount, r.opts.RandFunc()))
		}
		d.Message = r.opts.RedactFunc(d.Message)
		failed = append(failed, ports.FailItem{Ref: ref, Decision: d})
		res.Attempts = append(res.Attempts, d.RetryCount)
		if d.Final {
			res.Failed++
			res.FailedEvents = append(res.FailedEvents, FailedEvent{EventID: ev.EventID, EventType: ev.EventType, Code: d.Code, Attempts: d.RetryCount})
		} else {
			res.Retried++
			if res.RetryCodes == nil {
				res.RetryCodes = map[string]int{}
			}
			res.RetryCodes[d.Code]++
		}
	}

	var firstErr error
	leaseEnd := leaseExpiry(events)
	if len(done) > 0 {
		lost, err := r.retryMark(fctx, leaseEnd, func(now time.Time) ([]int64, error) { return r.store.Complete(fctx, owner, now, done) })
		if err != nil {
			// The events are in the queue; their leases expire and they are
			// published again under the same event_id (at least once).
			firstErr = fmt.Errorf("mark %d outbox events delivered: %w", len(done), err)
		} else {
			res.Delivered = len(done) - len(lost)
			res.Lost += len(lost)
			res.Lags, res.LagTraceParents = deliveryLags(now, done, doneAt, doneTrace, lost)
		}
	}
	if len(failed) > 0 {
		lost, err := r.retryMark(fctx, leaseEnd, func(now time.Time) ([]int64, error) { return r.store.Fail(fctx, owner, now, failed) })
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("record %d failed outbox deliveries: %w", len(failed), err)
		}
		res.Lost += len(lost)
	}
	for _, fe := range res.FailedEvents {
		r.opts.Logger.Error("outbox event failed for good; replay it after fixing the cause",
			"event_id", fe.EventID, "event_type", fe.EventType, "error_code", fe.Code, "attempts", fe.Attempts)
	}
	if res.Lost > 0 {
		r.opts.Logger.Warn("outbox leases lost before marking; another relay took over", "owner", owner, "count", res.Lost)
	}
	r.outage.observe(r.opts.Logger, now, unavailable, len(done))
	r.opts.Observer.Batch(res)
	return firstErr
}

// Mark retry bounds: a blink of the database (a restart, a failover) must
// not leave a published batch waiting for its whole lease to expire.
const (
	markRetryFirst = 50 * time.Millisecond
	markRetryMax   = time.Second
)

// retryMark runs mark until it succeeds, fails for another reason than an
// unreachable store, or the next try would come after leaseEnd; only then
// does the batch fall back to lease expiry (and a re-publish).
func (r *Relay) retryMark(ctx context.Context, leaseEnd time.Time, mark func(now time.Time) ([]int64, error)) ([]int64, error) {
	wait := markRetryFirst
	for {
		lost, err := mark(r.clock.Now())
		if err == nil || !errors.Is(err, ports.ErrUnavailable) || !r.clock.Now().Add(wait).Before(leaseEnd) {
			return lost, err
		}
		select {
		case <-ctx.Done():
			return lost, err
		case <-r.clock.After(wait):
		}
		wait = min(wait*2, markRetryMax)
	}
}

// leaseExpiry is the earliest lease expiry of events.
func leaseExpiry(events []outbox.Event) time.Time {
	var end time.Time
	for _, ev := range events {
		if end.IsZero() || ev.Lease.ExpiresAt.Before(end) {
			end = ev.Lease.ExpiresAt
		}
	}
	return end
}

// deliveryLags returns now minus the due time, and the trace_parent, for
// each delivered ref that was not lost.
func deliveryLags(now time.Time, done []ports.LeaseRef, dueAt []time.Time, traces []string, lost []int64) ([]time.Duration, []string) {
	lags := make([]time.Duration, 0, len(done)-len(lost))
	tps := make([]string, 0, len(done)-len(lost))
	for i, ref := range done {
		if !slices.Contains(lost, ref.ID) {
			lags = append(lags, max(now.Sub(dueAt[i]), 0))
			tps = append(tps, traces[i])
		}
	}
	return lags, tps
}
