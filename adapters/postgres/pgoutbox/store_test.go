package pgoutbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

var outboxT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestOutboxStore(t *testing.T) {
	t.Parallel()

	caps := contracttests.OutboxCaps{
		Outage: func(t *testing.T, _ ports.OutboxStore) (ports.OutboxStore, func()) {
			down, err := pgoutbox.NewStore(testinfra.UnreachableDB(t), pgoutbox.Config{})
			require.NoError(t, err)
			return down, func() {}
		},
	}
	contracttests.RunOutboxStore(t, caps, func(t *testing.T) ports.OutboxStore {
		t.Helper()
		store, err := pgoutbox.NewStore(testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun, pgoutbox.Config{})
		require.NoError(t, err)
		return store
	})
}

func TestNewStoreConfig(t *testing.T) {
	t.Parallel()

	db := bun.IDB(&bun.DB{})
	for _, tc := range []struct {
		name string
		cfg  pgoutbox.Config
		ok   bool
	}{
		{"ZeroIsValid", pgoutbox.Config{}, true},
		{"NegativeClaimLimit", pgoutbox.Config{ClaimLimit: -1}, false},
		{"HugeClaimLimit", pgoutbox.Config{ClaimLimit: pgoutbox.MaxLimit + 1}, false},
		{"NegativeSweepLimit", pgoutbox.Config{SweepLimit: -5}, false},
	} {
		_, err := pgoutbox.NewStore(db, tc.cfg)
		require.Equal(t, tc.ok, err == nil, "%s: NewStore(%+v) err=%v", tc.name, tc.cfg, err)
	}
	_, err := pgoutbox.NewStore(nil, pgoutbox.Config{})
	require.Error(t, err, "a nil db must be refused")
}

func TestAppendInBusinessTx(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		db    *bun.DB
		store *pgoutbox.Store
	}
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
		_, err := db.ExecContext(t.Context(), "CREATE TABLE tb_test_order (id bigint PRIMARY KEY, note text NOT NULL)")
		require.NoError(t, err)
		store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
		require.NoError(t, err)
		return &testBundle{db: db, store: store}
	}
	// placeOrder is the business write plus its event, in tx.
	placeOrder := func(ctx context.Context, tx bun.IDB, id int64, events ...outbox.Event) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO tb_test_order (id, note) VALUES (?, 'placed')", id); err != nil {
			return err
		}
		return pgoutbox.Append(ctx, tx, events...)
	}
	orderExists := func(t *testing.T, db *bun.DB, id int64) bool {
		t.Helper()
		var n int
		require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM tb_test_order WHERE id = ?", id).Scan(&n))
		return n == 1
	}
	eventExists := func(t *testing.T, s *pgoutbox.Store, eventID string) bool {
		t.Helper()
		_, err := s.Get(t.Context(), eventID)
		if errors.Is(err, ports.ErrNotFound) {
			return false
		}
		require.NoError(t, err)
		return true
	}

	t.Run("CommitMakesBothVisible", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ev := newOutboxEvent(t)
		require.NoError(t, b.db.RunInTx(t.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
			return placeOrder(ctx, tx, 1, ev)
		}))
		require.True(t, orderExists(t, b.db, 1), "committed business row")
		require.True(t, eventExists(t, b.store, ev.EventID), "committed event")
	})

	t.Run("RollbackMakesNeitherVisible", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ev := newOutboxEvent(t)
		boom := errors.New("business rule failed after the writes")
		err := b.db.RunInTx(t.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
			require.NoError(t, placeOrder(ctx, tx, 1, ev))
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.False(t, orderExists(t, b.db, 1), "rolled back business row must be gone")
		require.False(t, eventExists(t, b.store, ev.EventID), "rule: an event never outlives its rolled-back business fact")
	})

	t.Run("UncommittedEventIsNotClaimed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ev := newOutboxEvent(t)
		tx, err := b.db.BeginTx(t.Context(), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback() })
		require.NoError(t, placeOrder(t.Context(), tx, 1, ev))

		claim := ports.ClaimParams{Owner: "relay-a", Limit: 10, LeaseFor: time.Minute, Now: outboxT0.Add(time.Hour)}
		got, err := b.store.Claim(t.Context(), claim)
		require.NoError(t, err)
		require.Empty(t, got, "rule: rows of an open transaction are never claimed")

		require.NoError(t, tx.Commit())
		got, err = b.store.Claim(t.Context(), claim)
		require.NoError(t, err)
		require.Len(t, got, 1, "the committed event is claimable")
		require.Equal(t, ev.EventID, got[0].EventID)
	})

	t.Run("FailedAppendRollsBackBusinessWrite", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		taken := newOutboxEvent(t)
		require.NoError(t, b.store.Append(t.Context(), taken))
		fresh := newOutboxEvent(t)
		err := b.db.RunInTx(t.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
			return placeOrder(ctx, tx, 1, fresh, taken)
		})
		require.ErrorIs(t, err, ports.ErrConflict, "duplicate event_id %s", taken.EventID)
		require.False(t, orderExists(t, b.db, 1), "rule: when the event cannot be written the business fact is rolled back too")
		require.False(t, eventExists(t, b.store, fresh.EventID), "no event of the failed batch is stored")
	})

	t.Run("RefusesHandBuiltEvents", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ev := newOutboxEvent(t)
		ev.Payload = nil
		var verr *outbox.ValidationError
		require.ErrorAs(t, pgoutbox.Append(t.Context(), b.db, ev), &verr)
		require.Equal(t, "payload", verr.Field)
	})
}

func TestOutboxReplayRecordsAudit(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(t, err)
	ctx := t.Context()
	ev := newOutboxEvent(t)
	require.NoError(t, store.Append(ctx, ev))
	got, err := store.Claim(ctx, ports.ClaimParams{Owner: "relay-a", Limit: 1, LeaseFor: time.Minute, Now: outboxT0})
	require.NoError(t, err)
	require.Len(t, got, 1)
	d := outbox.FailureDecision{Status: outbox.Failed, NextAttemptAt: outboxT0, RetryCount: 2, Code: "X", Message: "y"}
	_, err = store.Fail(ctx, "relay-a", outboxT0, []ports.FailItem{{Ref: ports.LeaseRef{ID: got[0].ID, Token: got[0].Lease.Token}, Decision: d}})
	require.NoError(t, err)

	now := outboxT0.Add(time.Hour)
	req := outbox.ReplayRequest{Operator: "ops-7", Reason: "下游已恢复", BatchID: "b-42"}
	res, err := store.Replay(ctx, ports.ReplayParams{EventIDs: []string{ev.EventID}, Request: req, Now: now})
	require.NoError(t, err)
	require.Equal(t, []string{ev.EventID}, res.Replayed)

	var batch, by, reason string
	var at time.Time
	require.NoError(t, db.QueryRowContext(ctx,
		"SELECT replay_batch_id, replayed_by, replay_reason, replayed_at FROM tb_outbox_event WHERE event_id = ?", ev.EventID).
		Scan(&batch, &by, &reason, &at))
	require.Equal(t, []string{req.BatchID, req.Operator, req.Reason}, []string{batch, by, reason}, "replay record columns")
	require.True(t, now.Equal(at), "replayed_at: want %s, got %s", now, at)

	long := req
	long.BatchID = string(make([]byte, 65))
	_, err = store.Replay(ctx, ports.ReplayParams{EventIDs: []string{ev.EventID}, Request: long, Now: now})
	require.Error(t, err, "a batch id wider than replay_batch_id must be refused before writing")
}

func newOutboxEvent(t testing.TB) outbox.Event {
	t.Helper()
	id := uuid.NewString()
	ev, err := outbox.New(outbox.NewParams{
		EventID: id, EventType: "order.placed", PayloadVersion: 1,
		AggregateType: "order", AggregateID: id[:8], ResourceType: "order", ResourceID: id[:8],
		RequestID: "req-" + id[:8], Payload: map[string]any{"order_id": id[:8], "amount_cents": 1299},
		Now: outboxT0,
	})
	require.NoError(t, err)
	return ev
}
