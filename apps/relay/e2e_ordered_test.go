package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redisurl"
	"github.com/july/template/core/relay"
)

const cardStatusType = "card.status_changed"

// cardStatus is the payload of the ordered test event: the seq-th status
// change of one card.
type cardStatus struct {
	CardID string `json:"card_id"`
	Seq    int    `json:"seq"`
}

// cardConsumer is an in-process worker that records consumption evidence
// as the relay's own worker does (queue.Evidence), so ordered chains move
// on, and dead-letters what it gives up on as the relay does.
type cardConsumer struct {
	mu         sync.Mutex
	done       map[string]int // card -> highest seq handled to success, in order
	firstSeen  map[string]bool
	violations []string
	calls      int
	poisoned   atomic.Bool
}

// startCardConsumer runs the worker; the handler fails for good on the
// event poison names while c.poisoned is set.
func (w *world) startCardConsumer(poison string) *cardConsumer {
	w.t.Helper()
	c := &cardConsumer{done: map[string]int{}, firstSeen: map[string]bool{}}
	c.poisoned.Store(poison != "")
	logs := &testinfra.LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dl, err := relay.NewDeadLetter(w.store, ports.ClockFunc(time.Now), relay.DeadLetterConfig{}, log)
	require.NoError(w.t, err)
	ev := queue.NewEvidence(w.store, 0, log)
	mux, err := queue.NewMux(log, []queue.Consumer{{EventType: cardStatusType, Handler: queue.Handle(
		func(_ context.Context, env outbox.Envelope, p cardStatus) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.calls++
			if env.EventID == poison && c.poisoned.Load() {
				return outbox.Permanent("CARD_STATE_INVALID", "card "+p.CardID+" cannot take this status yet")
			}
			if !c.firstSeen[env.EventID] {
				c.firstSeen[env.EventID] = true
				if c.done[p.CardID] != p.Seq-1 {
					c.violations = append(c.violations, fmt.Sprintf("%s: seq %d handled after seq %d", p.CardID, p.Seq, c.done[p.CardID]))
				}
			}
			c.done[p.CardID] = max(c.done[p.CardID], p.Seq)
			return nil
		})},
		{EventType: outbox.AuditEventType, Handler: queue.Handle(func(context.Context, outbox.Envelope, outbox.AuditPayload) error { return nil })},
	}, queue.WithEvidence(ev, nil))
	require.NoError(w.t, err)
	topo, err := redisurl.Parse(w.redisURL)
	require.NoError(w.t, err)
	srv := queue.NewServer(queue.ConnOpt(topo), queue.ServerConfig{
		Queues: map[string]int{w.queue: 1}, Concurrency: 16, Logger: log, ShutdownTimeout: 2 * time.Second,
		DeadLetterFunc: queue.RecordDeadLetters(dl), RetryBase: 100 * time.Millisecond, RetryMax: 2 * time.Second,
		TaskCheckInterval: 50 * time.Millisecond, // as a service with ordered events sets it
	})
	require.NoError(w.t, srv.Start(mux))
	w.t.Cleanup(func() {
		srv.Shutdown()
		ev.Close()
		if w.t.Failed() {
			w.t.Logf("card consumer logs:\n%s", logs.String())
		}
	})
	return c
}

// appendCardChanges commits seq 1..n of every card, each change in its own
// transaction: one writer goroutine per card, all cards at once, so the
// table interleaves the aggregates. It returns the event ids by card.
func (w *world) appendCardChanges(cards []string, n int) map[string][]string {
	w.t.Helper()
	ids := make(map[string][]string, len(cards))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(cards))
	for _, card := range cards {
		wg.Go(func() {
			for seq := 1; seq <= n; seq++ {
				ev, err := outbox.New(outbox.NewParams{
					EventID: uuid.NewString(), EventType: cardStatusType, PayloadVersion: 1,
					AggregateType: "card", AggregateID: card, ResourceType: "card", ResourceID: card,
					RequestID: fmt.Sprintf("req-%s-%d", card, seq), Payload: cardStatus{CardID: card, Seq: seq},
					Now: time.Now(), Ordered: true,
				})
				if err == nil {
					err = w.db.Bun.RunInTx(w.t.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
						return pgoutbox.Append(ctx, tx, ev)
					})
				}
				if err != nil {
					errs <- fmt.Errorf("card %s seq %d: %w", card, seq, err)
					return
				}
				mu.Lock()
				ids[card] = append(ids[card], ev.EventID)
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(w.t, err)
	}
	return ids
}

// ORDERED DELIVERY through the real relay binary: 40 cards x 10 ordered
// status changes, written concurrently, drained by two relays, one of them
// SIGKILLed mid-drain (its leases expire and the other recovers them). The
// consumer gives up for good on card-07's third change, which blocks that
// card only: the other 39 complete, `relay outbox stuck` and
// outbox_stuck_aggregates show card-07, and `relay outbox replay` (audited)
// unblocks it once the consumer is fixed (its waiting changes, parked out
// of the claim's way meanwhile, come back as each predecessor's
// consumption is recorded). Every card's changes are handled
// in order (a change is first handled only after the previous one
// succeeded), each is consumed, and the consumption records of a card are
// in seq order.
func TestE2EOrderedDeliveryUnderTwoRelaysAndAKill(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	w := newWorld(t, "")
	const perCard = 10
	cards := make([]string, 40)
	for i := range cards {
		cards[i] = fmt.Sprintf("card-%02d", i)
	}
	ids := w.appendCardChanges(cards, perCard)
	poison := ids["card-07"][2]
	cons := w.startCardConsumer(poison)

	env := []string{"RELAY_LEASE_TTL=2s", "RELAY_POLL_INTERVAL=100ms"}
	a := w.startRelay("relay-a", env...)
	b := w.startRelay("relay-b", env...)
	const consumedCards = `SELECT count(*) FROM tb_outbox_event e WHERE e.event_type = '` + cardStatusType + `'
		AND EXISTS (SELECT 1 FROM tb_outbox_consumption c WHERE c.event_id = e.event_id)`
	total := len(cards) * perCard
	waitProgress(t, "a third consumed", stallLimit, false, func() (int, bool, string) {
		n := w.count(consumedCards)
		return n, n >= total/3, fmt.Sprintf("%d of %d consumed", n, total)
	})
	a.kill()

	// Everything but card-07's changes 3..10 is consumed by b.
	waitProgress(t, "all but the stuck card consumed", stallLimit, false, func() (int, bool, string) {
		n := w.count(consumedCards)
		return n, n >= total-(perCard-2), fmt.Sprintf("%d of %d consumed", n, total-(perCard-2))
	})
	w.waitCount(1, `SELECT count(*) FROM tb_outbox_consumer_failure WHERE event_id = ?::uuid AND resolved_at IS NULL`, poison)
	require.Equal(t, total-(perCard-2), w.count(consumedCards), "card-07 waits behind its failed change")
	require.Equal(t, perCard-3, w.count(`SELECT count(*) FROM tb_outbox_event WHERE aggregate_id = 'card-07' AND status = 1`),
		"changes 4..10 of card-07 are still pending: not published")

	out, errOut, code := w.runCLI("outbox", "stuck", "--json")
	require.Equal(t, 0, code, "stuck: %s", errOut)
	var stuck []struct {
		AggregateID string `json:"aggregate_id"`
		EventID     string `json:"blocking_event_id"`
		Reason      string `json:"reason"`
		Waiting     int    `json:"waiting"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &stuck), out)
	require.Len(t, stuck, 1, out)
	require.Equal(t, "card-07", stuck[0].AggregateID)
	require.Equal(t, poison, stuck[0].EventID)
	require.Equal(t, ports.StuckConsumerFailed, stuck[0].Reason)
	require.Equal(t, perCard-3, stuck[0].Waiting)
	eventually(t, "outbox_stuck_aggregates on the live relay", func() (bool, string) {
		v := b.metric("outbox_stuck_aggregates")
		return v == 1, fmt.Sprint(v)
	})

	// The relays park the waiting changes out of the claim's way.
	w.waitCount(perCard-3, `SELECT count(*) FROM tb_outbox_event WHERE aggregate_id = 'card-07' AND status = 1 AND next_attempt_at > now()`)

	// Fix the consumer and replay the blocker: card-07 completes, in order.
	cons.poisoned.Store(false)
	_, errOut, code = w.runCLIEnv([]string{"REDIS_URL=" + w.redisURL, "ASYNQ_QUEUE=" + w.queue},
		"outbox", "replay", "--event-id", poison, "--operator", "alice", "--reason", "card state machine fixed")
	require.Equal(t, 0, code, "replay: %s", errOut)
	waitProgress(t, "card-07 consumed after the replay", stallLimit, false, func() (int, bool, string) {
		n := w.count(consumedCards)
		return n, n == total, fmt.Sprintf("%d of %d consumed", n, total)
	})
	eventually(t, "no stuck aggregate left", func() (bool, string) {
		v := b.metric("outbox_stuck_aggregates")
		return v == 0, fmt.Sprint(v)
	})

	cons.mu.Lock()
	require.Empty(t, cons.violations, "rule: a card's change is first handled only after the previous one succeeded")
	for _, card := range cards {
		require.Equal(t, perCard, cons.done[card], "card %s handled to the end", card)
	}
	cons.mu.Unlock()
	require.Zero(t, w.count(`SELECT count(*) FROM (
		SELECT e.aggregate_id, e.id, lag(c.consumed_at) OVER (PARTITION BY e.aggregate_id ORDER BY e.id) AS prev_at, c.consumed_at
		FROM tb_outbox_event e JOIN tb_outbox_consumption c ON c.event_id = e.event_id
		WHERE e.event_type = '`+cardStatusType+`') x WHERE x.prev_at > x.consumed_at`),
		"each card's consumption records are in commit order")
	require.Equal(t, total, w.count(`SELECT count(*) FROM tb_outbox_event WHERE event_type = '`+cardStatusType+`' AND status = 3`))
	var audits []string
	require.NoError(t, w.db.Bun.NewRaw(`SELECT payload::text FROM tb_outbox_event WHERE event_type = ?`, outbox.AuditEventType).Scan(t.Context(), &audits))
	require.Len(t, audits, 1, "the replay is audited: %v", audits)
	require.Contains(t, audits[0], `"outbox.replay_consumer"`)
	require.Contains(t, audits[0], poison)
}
