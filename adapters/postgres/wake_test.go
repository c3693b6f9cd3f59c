package postgres_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
)

// TestWakeAfterCommit: Append turns the trigger's in-transaction NOTIFY
// off for each transaction of a pool from Open (outbox.notify = off, that
// transaction only: no session setting a pooler could hand on) and the
// pool wakes the relay once per committed outbox write instead, after the
// commit.
func TestWakeAfterCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tdb := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	db, err := postgres.Open(ctx, postgres.Config{URL: tdb.URL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	var wakes atomic.Int64
	postgres.CountWakes(db, func() { wakes.Add(1) })

	setting := func(db bun.IDB) string {
		var s string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT coalesce(current_setting('outbox.notify', true), '')").Scan(&s))
		return s
	}
	require.Empty(t, setting(db), "rule: no session setting")

	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := pgoutbox.Append(ctx, tx, newOutboxEvent(t)); err != nil {
			return err
		}
		require.Equal(t, "off", setting(tx), "rule: the appending transaction skips the trigger's NOTIFY")
		if err := pgoutbox.Append(ctx, tx, newOutboxEvent(t)); err != nil {
			return err
		}
		require.Zero(t, wakes.Load(), "rule: no wake-up before the commit")
		return nil
	})
	require.NoError(t, err)
	db.SetMaxOpenConns(1) // the session the transaction ran on
	require.Empty(t, setting(db), "rule: the setting ends with the transaction")
	require.Equal(t, int64(1), wakes.Load(), "rule: one wake-up per committed transaction")

	errRollback := errors.New("roll back")
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		require.NoError(t, pgoutbox.Append(ctx, tx, newOutboxEvent(t)))
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Equal(t, int64(1), wakes.Load(), "rule: a rolled-back transaction does not wake")

	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, "SELECT 1")
		return err
	})
	require.NoError(t, err)
	require.Equal(t, int64(1), wakes.Load(), "rule: a transaction without outbox writes does not wake")

	require.NoError(t, pgoutbox.Append(ctx, db, newOutboxEvent(t)))
	require.Equal(t, int64(2), wakes.Load(), "rule: an insert outside a transaction wakes at once")

	// A context kept from a finished transaction and reused for an
	// autocommit insert must still wake.
	var kept context.Context
	require.NoError(t, db.RunInTx(ctx, nil, func(ctx context.Context, _ bun.Tx) error { kept = ctx; return nil }))
	require.NoError(t, pgoutbox.Append(kept, db, newOutboxEvent(t)))
	require.Equal(t, int64(3), wakes.Load(), "rule: an insert after its context's transaction ended wakes at once")

	_, err = db.ExecContext(ctx, `INSERT INTO tb_outbox_event (event_id, event_type, payload_version, aggregate_type,
		aggregate_id, resource_type, resource_id, request_id, correlation_id, payload)
		VALUES (gen_random_uuid(), 'order.placed', 1, 'order', 'o1', 'order', 'o1', 'r1', 'c1', '{}')`)
	require.NoError(t, err)
	require.Equal(t, int64(4), wakes.Load(), "rule: a hand-written INSERT into the outbox wakes too")
}

// TestWakeReachesTheListener: the post-commit NOTIFY reaches a LISTENing
// relay, once per committed transaction (the trigger's own NOTIFY is off
// in the appending transactions); before the wake-up existed, a session
// with outbox.notify = off never woke it.
func TestWakeReachesTheListener(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tdb := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	var wakes atomic.Int64
	l := postgres.NewListener(tdb.URL, postgres.OutboxChannel, func() { wakes.Add(1) }, nil)
	require.NoError(t, l.Start(ctx))
	t.Cleanup(func() { _ = l.Stop(context.Background()) })
	select {
	case <-l.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("listener never connected")
	}
	require.Eventually(t, func() bool { return wakes.Load() == 1 }, 5*time.Second, 10*time.Millisecond, "one catch-up wake on connect")

	db, err := postgres.Open(ctx, postgres.Config{URL: tdb.URL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	for i := range 3 {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return pgoutbox.Append(ctx, tx, newOutboxEvent(t))
		})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return wakes.Load() >= int64(i+2) }, 5*time.Second, 5*time.Millisecond,
			"rule: each committed append wakes the listener")
		time.Sleep(100 * time.Millisecond)
		require.Equal(t, int64(i+2), wakes.Load(), "rule: once: the trigger did not notify as well")
	}

	// NotifyInTx keeps the trigger: the session does not turn it off.
	inTx, err := postgres.Open(ctx, postgres.Config{URL: tdb.URL, NotifyInTx: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inTx.Close() })
	var setting string
	require.NoError(t, inTx.QueryRowContext(ctx, "SELECT coalesce(current_setting('outbox.notify', true), '')").Scan(&setting))
	require.Empty(t, setting)
	require.NoError(t, pgoutbox.Append(ctx, inTx, newOutboxEvent(t)))
	require.Eventually(t, func() bool { return wakes.Load() == 5 }, 5*time.Second, 5*time.Millisecond, "the trigger's NOTIFY wakes")
}
