package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

const (
	statusOfEvent   = "SELECT count(*) FROM tb_outbox_event WHERE event_id = ?::uuid AND status = ?"
	consumedEvent   = "SELECT count(*) FROM consumed WHERE event_id = ?::uuid"
	deliveredEvents = "SELECT count(*) FROM tb_outbox_event WHERE status = 3 AND delivered_at IS NOT NULL"
	consumedAll     = "SELECT count(*) FROM consumed"
)

// A committed business transaction makes the order and its event visible
// together and the event reaches the consumer; a rolled-back one leaves
// neither and is never consumed; an event in a still-open transaction is
// invisible to the relay until commit.
func TestE2ECommitAndRollbackVisibility(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	cons := w.startConsumer()
	w.startRelay("relay-vis")
	ctx := t.Context()

	committed := w.commit("req-commit", "corr-commit", orderCreated{OrderID: "o-commit", Amount: 1})[0]
	require.Equal(t, 1, w.count("SELECT count(*) FROM orders WHERE id = 'o-commit'"), "committed order visible")
	require.Equal(t, 1, w.count("SELECT count(*) FROM tb_outbox_event WHERE event_id = ?::uuid", committed), "committed event visible")
	w.waitCount(1, consumedEvent, committed)

	errRule := errors.New("business rule failed after the outbox append")
	var rolledBack string
	err := w.db.Bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ids, err := w.placeOrders(ctx, tx, "req-rollback", "corr-rollback", orderCreated{OrderID: "o-rollback", Amount: 2})
		require.NoError(t, err)
		rolledBack = ids[0]
		return errRule
	})
	require.ErrorIs(t, err, errRule)
	require.Zero(t, w.count("SELECT count(*) FROM orders WHERE id = 'o-rollback'"), "rolled-back order invisible")
	require.Zero(t, w.count("SELECT count(*) FROM tb_outbox_event WHERE event_id = ?::uuid", rolledBack), "rolled-back event invisible")

	tx, err := w.db.Bun.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }() // no-op after Commit
	open, err := w.placeOrders(ctx, tx, "req-open", "corr-open", orderCreated{OrderID: "o-open", Amount: 3})
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond) // ~15 relay polls at 100ms
	require.Zero(t, w.count("SELECT count(*) FROM tb_outbox_event WHERE event_id = ?::uuid", open[0]), "uncommitted event invisible to other sessions")
	require.Zero(t, w.count(consumedEvent, open[0]), "uncommitted event must not be delivered")
	require.NoError(t, tx.Commit())
	w.waitCount(1, consumedEvent, open[0])
	w.waitCount(2, deliveredEvents)

	// By now the relay has passed over the backlog many times.
	require.Zero(t, w.count(consumedEvent, rolledBack), "rolled-back event must never be consumed")
	require.Equal(t, 2, w.count(consumedAll), "only the two committed events are consumed")
	perEvent, _ := cons.delivered()
	require.NotContains(t, perEvent, rolledBack)
}

// 200 events in 20 transactions go through one relay to the handler exactly
// once, with request_id and correlation_id unchanged, and every row ends
// Delivered with delivered_at.
func TestE2EEndToEnd(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	cons := w.startConsumer()
	w.startRelay("relay-e2e")

	const n, perTx = 200, 10
	ids := w.commitMany("e2e", n, perTx)
	require.Len(t, ids, n)
	w.waitCount(n, consumedAll)
	w.waitCount(n, deliveredEvents+" AND lease_owner IS NULL AND retry_count = 0")

	type row struct {
		EventID       string `bun:"event_id"`
		OrderID       string `bun:"order_id"`
		N             int    `bun:"n"`
		RequestID     string `bun:"request_id"`
		CorrelationID string `bun:"correlation_id"`
	}
	var rows []row
	require.NoError(t, w.db.Bun.NewRaw("SELECT event_id::text, order_id, n, request_id, correlation_id FROM consumed").Scan(t.Context(), &rows))
	byID := map[string]row{}
	for _, r := range rows {
		byID[r.EventID] = r
	}
	perEvent, total := cons.delivered()
	for i, id := range ids {
		got, ok := byID[id]
		require.True(t, ok, "event %d (%s) consumed", i, id)
		start := i / perTx * perTx
		require.Equal(t, row{
			EventID: id, OrderID: fmt.Sprintf("e2e-%04d", i), N: i,
			RequestID: fmt.Sprintf("req-e2e-%d", start), CorrelationID: fmt.Sprintf("corr-e2e-%d", start),
		}, got, "event %d arrives with its payload and ids unchanged", i)
		require.Equal(t, 1, perEvent[id], "event %d delivered once on the happy path", i)
	}
	require.Equal(t, n, total, "raw deliveries")
}

// Three relay processes with two loops each drain 1000 events committed
// while they run: every row is Delivered exactly once (the relays' delivered
// counters sum to 1000, so no row was marked twice or by a non-owner) and
// the consumer's effect happens once per event.
func TestE2ESeveralRelays(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	cons := w.startConsumer()
	var relays []*relayProc
	for i := range 3 {
		relays = append(relays, w.startRelay(fmt.Sprintf("relay-%d", i), "RELAY_LOOPS=2", "RELAY_BATCH_SIZE=25"))
	}

	const n = 1000
	ids := w.commitMany("many", n, 50)
	w.waitCount(n, deliveredEvents)
	w.waitCount(n, consumedAll)
	require.Zero(t, w.count("SELECT count(*) FROM tb_outbox_event WHERE status <> 3 OR lease_token < 1 OR lease_owner IS NOT NULL"),
		"every row delivered, claimed at least once and released")

	var sum float64
	eventually(t, "relays' outbox_delivered_total sums to 1000", func() (bool, string) {
		sum = 0
		var parts []string
		for _, r := range relays {
			v := r.metric("outbox_delivered_total")
			sum += v
			parts = append(parts, fmt.Sprintf("%s=%v", r.name, v))
		}
		return sum == n, strings.Join(parts, " ")
	})
	for _, r := range relays {
		require.Zero(t, r.metric("outbox_leases_lost_total"), "relay %s lost no lease", r.name)
		require.Empty(t, r.errorLines(), "relay %s logged errors", r.name)
	}
	perEvent, total := cons.delivered()
	for _, id := range ids {
		require.GreaterOrEqual(t, perEvent[id], 1, "event %s delivered", id)
	}
	t.Logf("raw deliveries %d for %d events", total, n)
}

// A relay SIGKILLed mid-batch (its Redis hangs, so it holds 300 leases) and
// a relay that died right after claiming leave Delivering rows behind;
// after the 2s leases expire a second relay recovers them and delivers the
// same event ids, and the consumer's effect happens once per event.
func TestE2EKilledRelay(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	cons := w.startConsumer()
	ctx := t.Context()

	ids := w.commitMany("kill", 300, 100)
	a := w.spawnRelay("relay-A", blackHole(t), "RELAY_LEASE_TTL=2s", "RELAY_BATCH_SIZE=1000", "RELAY_LOOPS=1")
	a.waitHealthy()
	const heldByA = "SELECT count(*) FROM tb_outbox_event WHERE status = 2 AND lease_owner = 'relay-A/0'"
	w.waitCount(300, heldByA)
	a.kill()
	require.Equal(t, 300, w.count(heldByA), "a killed relay releases nothing")

	ids = append(ids, w.commitMany("dead", 50, 50)...)
	claimed, err := w.store.Claim(ctx, ports.ClaimParams{Owner: "relay-dead/0", Limit: 1000, LeaseFor: 2 * time.Second, Now: time.Now()})
	require.NoError(t, err)
	require.Len(t, claimed, 50, "the dead relay's batch")

	b := w.startRelay("relay-B")
	w.waitCount(len(ids), deliveredEvents)
	w.waitCount(len(ids), consumedAll)
	require.Equal(t, len(ids), w.count("SELECT count(*) FROM tb_outbox_event WHERE lease_token = 2"),
		"each row claimed once by a dead relay and once by B, under the same event_id")
	eventually(t, "B counted the recovered leases", func() (bool, string) {
		v := b.metric("outbox_leases_recovered_total")
		return v >= float64(len(ids)), fmt.Sprint(v)
	})
	perEvent, total := cons.delivered()
	for _, id := range ids {
		require.GreaterOrEqual(t, perEvent[id], 1, "event %s delivered", id)
	}
	require.GreaterOrEqual(t, total, len(ids))
}

// A relay that enqueued a batch but died before marking it leaves the rows
// Delivering; the next relay recovers and publishes the same event ids
// again. Asynq still retains the completed tasks, so the republish is
// absorbed as a task-id conflict (Publish returns nil) and the handler runs
// once per event.
func TestE2EEnqueuedButNotMarked(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	cons := w.startConsumer()
	ctx := t.Context()

	const n = 20
	ids := w.commitMany("dup", n, n)
	claimed, err := w.store.Claim(ctx, ports.ClaimParams{Owner: "relay-dead/0", Limit: 100, LeaseFor: 2 * time.Second, Now: time.Now()})
	require.NoError(t, err)
	require.Len(t, claimed, n)
	envs := make([]outbox.Envelope, n)
	for i, ev := range claimed {
		envs[i] = ev.Envelope()
	}
	opt, err := asynq.ParseRedisURI(w.redisURL)
	require.NoError(t, err)
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	enq, err := queue.NewPublisher(client, queue.Config{Queue: w.queue})
	require.NoError(t, err)
	for i, err := range enq.Publish(ctx, envs) {
		require.NoError(t, err, "publish %s as the dying relay", envs[i].EventID)
	}
	// The crash: no Complete. The consumer processes the tasks anyway.
	w.waitCount(n, consumedAll)

	r := w.startRelay("relay-after-crash")
	w.waitCount(n, deliveredEvents+" AND lease_token = 2")
	eventually(t, "the relay recovered the dead relay's leases", func() (bool, string) {
		v := r.metric("outbox_leases_recovered_total")
		return v >= n, fmt.Sprint(v)
	})

	for i, err := range enq.Publish(ctx, envs) {
		require.NoError(t, err, "a republish of %s is absorbed, not an error", envs[i].EventID)
	}
	ins := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = ins.Close() })
	for _, id := range ids {
		info, err := ins.GetTaskInfo(w.queue, id)
		require.NoError(t, err, "task %s retained under its event id", id)
		require.Equal(t, asynq.TaskStateCompleted, info.State, "task %s", id)
	}
	time.Sleep(2 * time.Second) // longer than the worker's 1s queue poll
	perEvent, total := cons.delivered()
	for _, id := range ids {
		require.Equal(t, 1, perEvent[id], "event %s handled once", id)
	}
	require.Equal(t, n, total)
	require.Equal(t, n, w.count(consumedAll), "one effect per event")
}

// While Redis is down the relay keeps running: events go back to Pending
// with QUEUE_UNAVAILABLE and a backoff, even past RELAY_MAX_ATTEMPTS, and
// none fails for good; when Redis returns everything drains.
func TestE2ERedisDown(t *testing.T) {
	t.Parallel()
	rp := testinfra.StartRedisProc(t)
	w := newWorld(t, rp.URL)
	w.startConsumer()
	r := w.startRelay("relay-outage", "RELAY_MAX_ATTEMPTS=2")
	readyz := func(want int) {
		eventually(t, fmt.Sprintf("/readyz answers %d", want), func() (bool, string) {
			code, body := r.get("/readyz")
			return code == want, fmt.Sprintf("%d %s", code, body)
		})
	}
	readyz(http.StatusOK)

	rp.Stop(t)
	const n = 50
	w.commitMany("outage", n, 10)
	w.waitCount(n, `SELECT count(*) FROM tb_outbox_event WHERE status = 1 AND retry_count >= 2
		AND last_error_code = 'QUEUE_UNAVAILABLE' AND next_attempt_at > updated_at`)
	readyz(http.StatusServiceUnavailable)
	require.Zero(t, w.count("SELECT count(*) FROM tb_outbox_event WHERE status = 4"),
		"an outage never fails events for good, even past RELAY_MAX_ATTEMPTS=2")
	require.Zero(t, w.count(consumedAll))

	rp.Start(t)
	w.waitCount(n, consumedAll)
	w.waitCount(n, deliveredEvents)
	require.Zero(t, w.count("SELECT count(*) FROM tb_outbox_event WHERE status = 4"))
	readyz(http.StatusOK)
	require.False(t, r.exited(), "the relay survived the outage")
}

// The operator commands: list and show never print payloads unless asked,
// changes need --operator and --reason (exit 2 otherwise), and a replayed
// failed event is delivered under its event id with an audit event.
func TestE2EOperatorCommands(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	ctx := t.Context()

	failedID := w.commit("req-op", "corr-op", orderCreated{OrderID: "o-op", Amount: 7})[0]
	claimed, err := w.store.Claim(ctx, ports.ClaimParams{Owner: "relay-op/0", Limit: 10, LeaseFor: time.Minute, Now: time.Now()})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	now := time.Now()
	d := outbox.Policy{MaxAttempts: 3}.OnFailure(0, outbox.Permanent("ENVELOPE_INVALID", "planted by the e2e test"), now, 0.5)
	require.True(t, d.Final, "a permanent error is final")
	lost, err := w.store.Fail(ctx, "relay-op/0", now, []ports.FailItem{{Ref: ports.LeaseRef{ID: claimed[0].ID, Token: claimed[0].Lease.Token}, Decision: d}})
	require.NoError(t, err)
	require.Empty(t, lost)
	stuckID := w.commit("req-lease", "corr-lease", orderCreated{OrderID: "o-lease", Amount: 8})[0]
	held, err := w.store.Claim(ctx, ports.ClaimParams{Owner: "relay-dead/0", Limit: 10, LeaseFor: time.Hour, Now: time.Now()})
	require.NoError(t, err)
	require.Len(t, held, 1)

	out, errOut, code := w.runCLI("outbox", "list", "--status", "failed", "--json")
	require.Equal(t, 0, code, "list: %s", errOut)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &list), "list --json output: %s", out)
	require.Len(t, list, 1, "only the failed event: %s", out)
	require.Equal(t, failedID, list[0]["event_id"])
	require.Equal(t, "failed", list[0]["status"])
	require.Equal(t, "ENVELOPE_INVALID", list[0]["last_error_code"])
	require.NotContains(t, list[0], "payload")

	out, errOut, code = w.runCLI("outbox", "show", failedID)
	require.Equal(t, 0, code, "show: %s", errOut)
	var plain map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &plain), "show output: %s", out)
	require.Equal(t, failedID, plain["event_id"])
	require.NotContains(t, plain, "payload", "show hides the payload by default")
	require.NotContains(t, out, `"amount"`, "no payload field leaks")
	out, errOut, code = w.runCLI("outbox", "show", "--payload", failedID)
	require.Equal(t, 0, code, "show --payload: %s", errOut)
	var shown struct {
		EventID string       `json:"event_id"`
		Payload orderCreated `json:"payload"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown), "show output: %s", out)
	require.Equal(t, orderCreated{OrderID: "o-op", Amount: 7}, shown.Payload)

	const audits = `SELECT count(*) FROM tb_outbox_event WHERE event_type = 'audit.recorded' AND payload->>'action' = ?`
	for _, args := range [][]string{
		{"outbox", "replay", "--event-id", failedID},
		{"outbox", "replay", "--event-id", failedID, "--operator", "alice"},
		{"outbox", "release-leases", "--reason", "relay died"},
	} {
		_, errOut, code = w.runCLI(args...)
		require.Equal(t, 2, code, "%v without --operator/--reason", args)
		require.Contains(t, errOut, "--operator and --reason are required", "%v", args)
	}
	require.Equal(t, 1, w.count(statusOfEvent, failedID, 4), "refused replay changed nothing")
	require.Zero(t, w.count(audits, "outbox.replay"))

	out, errOut, code = w.runCLI("outbox", "replay", "--event-id", failedID, "--operator", "alice", "--reason", "cause fixed")
	require.Equal(t, 0, code, "replay: %s", errOut)
	var replay struct {
		BatchID  string   `json:"batch_id"`
		Replayed []string `json:"replayed"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &replay), "replay output: %s", out)
	require.Equal(t, []string{failedID}, replay.Replayed)
	require.Equal(t, 1, w.count(`SELECT count(*) FROM tb_outbox_event WHERE event_id = ?::uuid AND status = 1 AND retry_count = 0
		AND replayed_by = 'alice' AND replay_reason = 'cause fixed' AND replay_batch_id = ?`, failedID, replay.BatchID), "replayed row")
	require.Equal(t, 1, w.count(audits+` AND payload->>'actor' = 'alice' AND payload->>'resource_id' = ? AND payload->>'after' = ?`,
		"outbox.replay", replay.BatchID, failedID), "audit event for the replay")

	out, errOut, code = w.runCLI("outbox", "release-leases", "--owner", "relay-dead/0", "--operator", "bob", "--reason", "relay died")
	require.Equal(t, 0, code, "release-leases: %s", errOut)
	require.Contains(t, out, `"released": 1`)
	require.Equal(t, 1, w.count(statusOfEvent, stuckID, 1), "released lease is pending again")
	require.Equal(t, 1, w.count(audits+` AND payload->>'actor' = 'bob'`, "outbox.release_leases"))

	cons := w.startConsumer()
	w.startRelay("relay-op")
	w.waitCount(1, consumedEvent, failedID)
	w.waitCount(1, consumedEvent, stuckID)
	w.waitCount(1, statusOfEvent, failedID, 3)
	eventually(t, "audit events reach the consumer", func() (bool, string) {
		cons.mu.Lock()
		defer cons.mu.Unlock()
		return cons.audits >= 2, fmt.Sprint(cons.audits)
	})

	out, errOut, code = w.runCLI("outbox", "replay", "--event-id", failedID, "--operator", "alice", "--reason", "again")
	require.Equal(t, 0, code, "replay of a delivered event: %s", errOut)
	var again struct {
		Replayed []string          `json:"replayed"`
		Skipped  map[string]string `json:"skipped"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &again), "replay output: %s", out)
	require.Empty(t, again.Replayed, "a delivered event is never replayed: %s", out)
	require.Contains(t, again.Skipped, failedID)
	require.Equal(t, 1, w.count(statusOfEvent, failedID, 3))
	// Each replay keeps its own audit record (a regression once): the row's replay
	// columns show the last one, the audit trail every one.
	require.Equal(t, 2, w.count(audits, "outbox.replay"), "one audit record per replay")
}

// The admin server answers /healthz, /readyz and /metrics, the delivered
// counter moves, and SIGTERM under load exits 0 within 10s without
// stranding a lease.
func TestE2EAdminEndpoints(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	w.startConsumer()
	r := w.startRelay("relay-admin", "RELAY_BATCH_SIZE=50")

	code, body := r.get("/healthz")
	require.Equal(t, http.StatusOK, code, "/healthz: %s", body)
	eventually(t, "/readyz answers 200", func() (bool, string) {
		code, body := r.get("/readyz")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	code, body = r.get("/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, name := range []string{"outbox_pending_events", "outbox_delivered_total", "outbox_oldest_pending_age_seconds"} {
		require.Contains(t, body, name)
	}

	w.commitMany("adm", 30, 10)
	w.waitCount(30, deliveredEvents)
	eventually(t, "outbox_delivered_total reaches 30", func() (bool, string) {
		v := r.metric("outbox_delivered_total")
		return v == 30, fmt.Sprint(v)
	})

	const backlog = 1000
	w.commitMany("term", backlog, 500)
	eventually(t, "the relay works on the backlog", func() (bool, string) {
		n := w.count("SELECT count(*) FROM tb_outbox_event WHERE status IN (2, 3)")
		return n > 30, fmt.Sprint(n)
	})
	require.NoError(t, r.terminate(10*time.Second), "SIGTERM exits 0")
	require.Zero(t, w.count("SELECT count(*) FROM tb_outbox_event WHERE status = 2"), "graceful stop strands no lease")
	require.Contains(t, r.logs.String(), "relay stopping")
	t.Logf("%d of %d events delivered when the relay stopped", w.count(deliveredEvents), 30+backlog)

	w.startRelay("relay-admin-2")
	w.waitCount(30+backlog, deliveredEvents)
	w.waitCount(30+backlog, consumedAll)
}
