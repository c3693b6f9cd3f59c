package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
)

// Reconciler defaults and bounds.
const (
	// DefaultReconcileEvery is the safety net's period: a loss no signal
	// announced is found within it (plus Grace for the newest events).
	DefaultReconcileEvery = 30 * time.Second
	// DefaultReconcileGrace keeps the scan this far behind now: a relay
	// stamps delivered_at before its commit, and relays' clocks differ.
	DefaultReconcileGrace = 30 * time.Second
	// DefaultReconcileHorizon is how far back a starting relay looks: the
	// queue's retention (a consumed task stays visible that long).
	DefaultReconcileHorizon = 24 * time.Hour
	// DefaultMaxWatched bounds the unconsumed events held in memory; past
	// it the scan waits until consumers catch up.
	DefaultMaxWatched = 100_000
	// DefaultMaxRepublish bounds how often one event is published again
	// without any consumer recording it (a type no worker here consumes).
	DefaultMaxRepublish = 5
	// DefaultEvidenceLag is how long a pass waits before it calls a task
	// the queue no longer holds lost: a worker writes its consumption
	// records in the background (within 50 ms), so a task that finished
	// just before the queue was read has its record by then.
	DefaultEvidenceLag = 2 * time.Second

	// CodeConsumerAbandoned is the consumer failure recorded for a task the
	// queue archived without a consumer ever reporting a final failure:
	// its worker died on every attempt (a crash, an OOM kill).
	CodeConsumerAbandoned = "CONSUMER_ABANDONED"
	// CodeNeverConsumed is the consumer failure recorded for an ordered
	// event the reconciler gave up on (published MaxRepublish times, never
	// recorded): the events behind it wait, and the failure makes the
	// aggregate show as stuck and the event replayable.
	CodeNeverConsumed = "CONSUMER_NEVER_RECORDED"
	// QueueConsumer names the evidence the reconciler records for a task
	// it saw completed in the queue (a consumer that records none itself).
	QueueConsumer = "queue:completed"

	// TriggerPeriodic names the safety net's passes in metrics and logs.
	TriggerPeriodic = "periodic"
	// LossMasterSwitch is the ports.LossSignal kind of a queue master
	// switch Sentinel announced (ports.MasterSwitchWatcher).
	LossMasterSwitch = "master_switch"
	// LossDatabaseRestored is the signal counted when History found the
	// database restored or promoted and the queue forgot its tasks.
	LossDatabaseRestored = "database_restored"

	reconcilePage = 500
)

// ReconcileConfig tunes a Reconciler. The zero value is valid.
type ReconcileConfig struct {
	Every        time.Duration // default DefaultReconcileEvery
	Grace        time.Duration // default DefaultReconcileGrace
	Horizon      time.Duration // default DefaultReconcileHorizon
	MaxWatched   int           // default DefaultMaxWatched
	MaxRepublish int           // default DefaultMaxRepublish
	EvidenceLag  time.Duration // default DefaultEvidenceLag
}

// ReconcileStores are the Reconciler's ports.
type ReconcileStores struct {
	Outbox   ports.OutboxConsumptionReader
	Failures ports.ConsumerFailureStore
	Recorder ports.ConsumptionRecorder
	Queue    ports.QueueInventory
	Pub      ports.Publisher
	// History, when set, is checked first in every pass: after a restore
	// the queue forgets its tasks and the pass starts over from Horizon.
	History *History
}

// ReconcileObserver receives what the reconciler did, for metrics.
type ReconcileObserver interface {
	Signal(kind string)
	Pass(ReconcileResult)
}

// ReconcileResult summarises one pass.
type ReconcileResult struct {
	Trigger     string
	Watched     int           // delivered events still waiting for their consumer
	OldestAge   time.Duration // now minus the due time (DueAt) of the oldest of them
	Republished int           // lost tasks published again
	Completed   int           // seen completed in the queue; evidence recorded
	Abandoned   int           // archived without a consumer failure; recorded
	GaveUp      int           // published MaxRepublish times, never consumed
	Err         error
}

type watched struct {
	created     time.Time
	republished int
	last        time.Time // when it was last published again
}

// republishSpacing is the least time between two republishes of one
// event, doubling with each (5 s, 10 s, 20 s, 40 s): a storm of loss
// signals (an eviction runs a pass every few hundred milliseconds) would
// otherwise spend MaxRepublish in a second, while the storm still evicts
// what was just published, and the event would be given up for good.
const republishSpacing = 5 * time.Second

// Reconciler makes Postgres, not Redis, the final fact for events: it
// follows every delivered event until a consumer records it (or its final
// failure is recorded), and publishes again, under its event_id, each one
// whose task the queue holds in no state, since the queue lost it (a
// restart without persistence, a failover, a flush, an eviction).
//
// A task that is pending, active, scheduled, retrying or archived is
// never published again. A pass reads the queue first, then, for a task
// the queue no longer holds, waits EvidenceLag (longer than a worker takes
// to write its consumption records) and reads Postgres: a task that is
// gone and still unconsumed then was lost, not finished. Each pass reads only what awaits consumption: the delivered
// rows since the last pass and the events still waiting, never the table.
type Reconciler struct {
	st    ReconcileStores
	clock ports.Clock
	cfg   ReconcileConfig
	log   *slog.Logger
	obs   ReconcileObserver

	trigger chan string
	svc     startstop.Service

	// Owned by the pass (one at a time).
	cursor   ports.DeliveredCursor
	replayed time.Time // consumer replays resolved since then are read again
	started  bool
	watch    map[string]*watched
}

// NewReconciler returns a Reconciler; obs and log may be nil.
func NewReconciler(st ReconcileStores, clock ports.Clock, cfg ReconcileConfig, obs ReconcileObserver, log *slog.Logger) (*Reconciler, error) {
	if st.Outbox == nil || st.Failures == nil || st.Recorder == nil || st.Queue == nil || st.Pub == nil || clock == nil {
		return nil, errors.New("relay: NewReconciler needs the outbox, failure, consumption, queue and publisher ports and a clock")
	}
	cfg.Every = cmp.Or(cfg.Every, DefaultReconcileEvery)
	cfg.Grace = cmp.Or(cfg.Grace, DefaultReconcileGrace)
	cfg.Horizon = cmp.Or(cfg.Horizon, DefaultReconcileHorizon)
	cfg.MaxWatched = cmp.Or(cfg.MaxWatched, DefaultMaxWatched)
	cfg.MaxRepublish = cmp.Or(cfg.MaxRepublish, DefaultMaxRepublish)
	cfg.EvidenceLag = cmp.Or(cfg.EvidenceLag, DefaultEvidenceLag)
	if cfg.Every < 0 || cfg.Grace < 0 || cfg.Horizon < cfg.Grace || cfg.MaxWatched < 1 || cfg.MaxRepublish < 1 || cfg.EvidenceLag < 0 {
		return nil, fmt.Errorf("relay: reconcile config %+v: durations must be positive, Horizon at least Grace, limits at least 1", cfg)
	}
	if log == nil {
		log = slog.Default()
	}
	if obs == nil {
		obs = nopReconcileObserver{}
	}
	return &Reconciler{st: st, clock: clock, cfg: cfg, log: log.With("component", "outbox-reconcile"), obs: obs,
		trigger: make(chan string, 1), watch: map[string]*watched{}}, nil
}

// Signal reports a sign of loss: the next pass runs at once. It never
// blocks; signals arriving during a pass coalesce into one more pass.
func (r *Reconciler) Signal(s ports.LossSignal) {
	r.log.Warn("the queue may have lost tasks; checking every unconsumed event now", "signal", s.Kind, "detail", s.Detail)
	r.obs.Signal(s.Kind)
	select {
	case r.trigger <- s.Kind:
	default:
	}
}

// Start runs a pass now and then every Every or on a signal, until Stop.
func (r *Reconciler) Start(context.Context) error {
	r.svc.Start(r.run)
	return nil
}

// Stop ends the loop and waits for the pass in progress or for ctx.
func (r *Reconciler) Stop(ctx context.Context) error {
	if err := r.svc.Stop(ctx); err != nil {
		return fmt.Errorf("outbox reconcile: %w", err)
	}
	return nil
}

func (r *Reconciler) run(ctx context.Context) {
	trigger := TriggerPeriodic
	for {
		res := r.Pass(ctx, trigger)
		if res.Err != nil && ctx.Err() == nil {
			r.log.Warn("reconcile pass failed; retrying at the next one", "trigger", trigger, "error", res.Err)
		}
		select {
		case <-ctx.Done():
			return
		case trigger = <-r.trigger:
		case <-r.clock.After(r.cfg.Every):
			trigger = TriggerPeriodic
		}
	}
}

// Pass runs one reconciliation: it adds the events delivered since the
// last pass that no consumer recorded to the watched set, then checks the
// whole set against the queue. A pass after a signal also takes the
// events inside the grace period, since the loss may have taken them too.
// It is not safe to call Pass concurrently.
func (r *Reconciler) Pass(ctx context.Context, trigger string) ReconcileResult {
	now := r.clock.Now()
	res := ReconcileResult{Trigger: trigger}
	if err := r.CheckHistory(ctx); err != nil {
		res.Err = err
	} else if err := r.scan(ctx, now, trigger != TriggerPeriodic); err != nil {
		res.Err = err
	} else {
		res.Err = r.check(ctx, now, &res)
	}
	res.Watched = len(r.watch)
	oldest := now
	for _, w := range r.watch {
		if w.created.Before(oldest) {
			oldest = w.created
		}
	}
	res.OldestAge = now.Sub(oldest)
	if res.Republished > 0 {
		r.log.Warn("published again the events whose tasks the queue had lost", "trigger", trigger,
			"republished", res.Republished, "still_unconsumed", res.Watched)
	}
	r.obs.Pass(res)
	return res
}

// CheckHistory runs History's check (every pass does, first); when the
// queue forgot its tasks, the watched set and the cursor start over, since
// every delivered event of the horizon that no consumer recorded (in the
// restored database) may have lost its task. An app calls it before the
// worker and the relays start, and before Start.
func (r *Reconciler) CheckHistory(ctx context.Context) error {
	if r.st.History == nil {
		return nil
	}
	forgot, err := r.st.History.Check(ctx)
	if forgot {
		r.obs.Signal(LossDatabaseRestored)
		r.started = false
		clear(r.watch)
	}
	return err
}

// scan reads newly delivered, unconsumed events into the watched set. The
// cursor stays Grace behind now; recent (after a signal) also reads past
// it without moving it.
func (r *Reconciler) scan(ctx context.Context, now time.Time, recent bool) error {
	if !r.started {
		r.cursor = ports.DeliveredCursor{DeliveredAt: now.Add(-r.cfg.Horizon)}
		r.replayed = r.cursor.DeliveredAt
		r.started = true
	}
	until := now.Add(-r.cfg.Grace)
	next, err := r.read(ctx, r.cursor, until)
	if err != nil {
		return err
	}
	r.cursor = next
	if recent {
		if _, err = r.read(ctx, r.cursor, now); err != nil {
			return err
		}
	}
	return r.readReplayed(ctx, now)
}

// readReplayed adds the events a consumer replay published again since the
// last look: their delivered_at is behind the cursor. It looks back Grace
// (the operator's clock is not the relay's). A full page keeps the mark, so
// the rest is read once the first are consumed.
func (r *Reconciler) readReplayed(ctx context.Context, now time.Time) error {
	evs, err := r.st.Outbox.ReplayedUnconsumed(ctx, r.replayed, reconcilePage)
	if err != nil {
		return fmt.Errorf("read replayed, unconsumed events: %w", err)
	}
	for _, ev := range evs {
		if len(r.watch) >= r.cfg.MaxWatched {
			return nil
		}
		if _, ok := r.watch[ev.EventID]; !ok {
			r.watch[ev.EventID] = &watched{created: ev.DueAt()}
		}
	}
	if len(evs) < reconcilePage {
		r.replayed = now.Add(-r.cfg.Grace)
	}
	return nil
}

// read adds the unconsumed events after cur up to until and returns where
// it stopped: until itself when it read them all, so rows stamped at or
// before until are not read again.
func (r *Reconciler) read(ctx context.Context, cur ports.DeliveredCursor, until time.Time) (ports.DeliveredCursor, error) {
	for len(r.watch) < r.cfg.MaxWatched {
		evs, err := r.st.Outbox.DeliveredUnconsumed(ctx, cur, until, reconcilePage)
		if err != nil {
			return cur, fmt.Errorf("read delivered, unconsumed events: %w", err)
		}
		for _, ev := range evs {
			if _, ok := r.watch[ev.EventID]; !ok {
				r.watch[ev.EventID] = &watched{created: ev.DueAt()}
			}
		}
		if len(evs) < reconcilePage {
			return ports.DeliveredCursor{DeliveredAt: until, ID: math.MaxInt64}, nil
		}
		last := evs[len(evs)-1]
		cur = ports.DeliveredCursor{DeliveredAt: *last.DeliveredAt, ID: last.ID}
	}
	r.log.Warn("too many delivered events wait for their consumer; newer ones are checked once consumers catch up",
		"watched", len(r.watch), "max", r.cfg.MaxWatched)
	return cur, nil
}

// check asks the queue about every watched event, then Postgres, in that
// order (see Reconciler), and acts on what is settled or lost.
func (r *Reconciler) check(ctx context.Context, now time.Time, res *ReconcileResult) error {
	ids := make([]string, 0, len(r.watch))
	for id := range r.watch {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// One call for the whole set: the queue may read a list once for all.
	states, err := r.st.Queue.TaskStates(ctx, ids)
	if err != nil {
		return fmt.Errorf("read the queue's tasks: %w", err)
	}
	var lost []string
	for start := 0; start < len(ids); start += reconcilePage {
		end := min(start+reconcilePage, len(ids))
		missing, err := r.checkChunk(ctx, ids[start:end], states[start:end], now, res)
		if err != nil {
			return err
		}
		lost = append(lost, missing...)
	}
	if len(lost) == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-r.clock.After(r.cfg.EvidenceLag):
	}
	for start := 0; start < len(lost); start += reconcilePage {
		if err := r.republish(ctx, lost[start:min(start+reconcilePage, len(lost))], res); err != nil {
			return err
		}
	}
	return nil
}

// checkChunk settles what the queue and Postgres agree on and returns the
// events the queue no longer holds that no consumer recorded.
func (r *Reconciler) checkChunk(ctx context.Context, ids []string, states []ports.QueueState, now time.Time, res *ReconcileResult) ([]string, error) {
	evs, err := r.st.Outbox.Unconsumed(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read which events are still unconsumed: %w", err)
	}
	still := make(map[string]outbox.Event, len(evs))
	for _, ev := range evs {
		still[ev.EventID] = ev
	}
	var (
		lost          []string
		completed     []ports.Consumption
		abandoned     []outbox.Event
		neverConsumed []outbox.Event // ordered, given up on: its aggregate waits
	)
	for i, id := range ids {
		ev, ok := still[id]
		if !ok {
			delete(r.watch, id) // consumed, failed for good, replayed or purged
			continue
		}
		switch states[i] {
		case ports.QueueMissing:
			w := r.watch[id]
			if w.republished > 0 && now.Before(w.last.Add(republishSpacing<<(w.republished-1))) {
				continue // published again a moment ago: give it time
			}
			if w.republished >= r.cfg.MaxRepublish {
				r.log.Error("event published again without any consumer recording it; stopped following it (does a worker with consumption evidence consume this type?)",
					"event_id", id, "event_type", ev.EventType, "republished", w.republished)
				delete(r.watch, id)
				res.GaveUp++
				if ev.Ordered {
					neverConsumed = append(neverConsumed, ev)
				}
				continue
			}
			lost = append(lost, id)
		case ports.QueueCompleted:
			completed = append(completed, ports.Consumption{EventID: id, Consumer: QueueConsumer, At: now, Ordered: ev.Ordered})
		case ports.QueueArchived:
			abandoned = append(abandoned, ev)
		}
	}
	if len(completed) > 0 {
		if err := r.st.Recorder.RecordConsumed(ctx, completed); err != nil {
			return nil, fmt.Errorf("record consumption seen in the queue: %w", err)
		}
		for _, c := range completed {
			delete(r.watch, c.EventID)
		}
		res.Completed += len(completed)
	}
	for _, ev := range abandoned {
		ok, err := r.markFailed(ctx, ev, CodeConsumerAbandoned,
			"the queue archived the task without a consumer reporting a result: its worker stopped on every attempt (crash, OOM kill)", now)
		if err != nil {
			return nil, err
		}
		if ok {
			res.Abandoned++
			r.log.Error("outbox event abandoned by its consumer: the queue archived it after every attempt died; recorded as a consumer failure",
				"event_id", ev.EventID, "event_type", ev.EventType, "code", CodeConsumerAbandoned)
		}
	}
	for _, ev := range neverConsumed { // counted in GaveUp
		ok, err := r.markFailed(ctx, ev, CodeNeverConsumed,
			fmt.Sprintf("ordered event published again %d times without any consumer recording it; the events of its aggregate wait behind it", r.cfg.MaxRepublish), now)
		if err != nil {
			return nil, err
		}
		if ok {
			r.log.Error("ordered outbox event never consumed: recorded as a consumer failure; its aggregate waits until it is replayed",
				"event_id", ev.EventID, "event_type", ev.EventType, "code", CodeNeverConsumed)
		}
	}
	return lost, nil
}

// markFailed records a consumer failure for ev and stops following it.
func (r *Reconciler) markFailed(ctx context.Context, ev outbox.Event, code, msg string, now time.Time) (bool, error) {
	ok, err := r.st.Failures.MarkConsumerFailed(ctx, ports.ConsumerFailure{EventID: ev.EventID, Code: code, Message: msg, At: now})
	if err != nil {
		return false, fmt.Errorf("record consumer failure %s of event %s: %w", code, ev.EventID, err)
	}
	delete(r.watch, ev.EventID)
	return ok, nil
}

// republish publishes again those of ids that are still unconsumed after
// the evidence lag.
func (r *Reconciler) republish(ctx context.Context, ids []string, res *ReconcileResult) error {
	evs, err := r.st.Outbox.Unconsumed(ctx, ids)
	if err != nil {
		return fmt.Errorf("read which lost events are still unconsumed: %w", err)
	}
	still := make(map[string]bool, len(evs))
	envs := make([]outbox.Envelope, len(evs))
	for i, ev := range evs {
		still[ev.EventID], envs[i] = true, ev.Envelope()
	}
	for _, id := range ids {
		if !still[id] {
			delete(r.watch, id) // its record arrived meanwhile
		}
	}
	if len(envs) == 0 {
		return nil
	}
	var failed error
	for i, err := range r.st.Pub.Publish(ctx, envs) {
		if err != nil {
			failed = err
			continue
		}
		w := r.watch[envs[i].EventID]
		w.republished++
		w.last = r.clock.Now()
		res.Republished++
	}
	if failed != nil {
		return fmt.Errorf("publish lost events again: %w", failed)
	}
	return nil
}

type nopReconcileObserver struct{}

func (nopReconcileObserver) Signal(string)        {}
func (nopReconcileObserver) Pass(ReconcileResult) {}
