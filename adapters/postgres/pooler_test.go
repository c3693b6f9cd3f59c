//go:build pooler

package postgres_test

// Behind PgBouncer in transaction mode (make test-pooler: scripts/pgbouncer.sh
// starts one and sets TEST_PGBOUNCER_URL). Regression: every pool from
// Open failed here at connect: "FATAL: unsupported startup parameter:
// outbox.notify (SQLSTATE 08P01)".

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
)

// TestPoolerTransactionMode: a pool from Open works through the pooler and
// leaves no session state behind; the outbox wake-up reaches a listener on
// the direct URL, once per commit; the relay store's asynchronous commit
// is per transaction; IsDirect tells the two URLs apart.
func TestPoolerTransactionMode(t *testing.T) {
	ctx := t.Context()
	tdb := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	pooled := testinfra.PoolerURL(t, tdb.URL)
	db, err := postgres.Open(ctx, postgres.Config{URL: pooled, RuntimeParams: map[string]string{"application_name": "pooler-test"}})
	require.NoError(t, err, "rule: a pool from Open connects through PgBouncer in transaction mode")
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, postgres.Health(ctx, db))

	direct, err := postgres.IsDirect(ctx, db)
	require.NoError(t, err)
	require.False(t, direct, "rule: IsDirect sees the pooler")
	direct, err = postgres.IsDirect(ctx, tdb.Bun)
	require.NoError(t, err)
	require.True(t, direct, "rule: IsDirect sees a direct connection")

	var wakes atomic.Int64
	l := postgres.NewListenerWith(postgres.ListenerConfig{URL: tdb.URL, Channel: postgres.OutboxChannel,
		Notify: func() { wakes.Add(1) }, Probe: probeThrough(db)})
	require.NoError(t, l.Start(ctx))
	t.Cleanup(func() { _ = l.Stop(context.Background()) })
	require.Eventually(t, l.Working, 10*time.Second, 5*time.Millisecond, "rule: the direct LISTEN hears its probe sent through the pooler")
	time.Sleep(100 * time.Millisecond)
	base := wakes.Load() // the catch-up and the probe

	for i := range 3 {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return pgoutbox.Append(ctx, tx, newOutboxEvent(t))
		})
		require.NoError(t, err)
		want := base + int64(i) + 1
		require.Eventually(t, func() bool { return wakes.Load() >= want }, 5*time.Second, 2*time.Millisecond,
			"rule: each append committed through the pooler wakes the listener")
		time.Sleep(100 * time.Millisecond)
		require.Equal(t, want, wakes.Load(), "rule: once: the trigger's NOTIFY was off in the appending transaction")
	}
	for range 20 { // whichever server connection the pooler lends next
		var notify, syncCommit string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT coalesce(current_setting('outbox.notify', true), ''), current_setting('synchronous_commit')").
			Scan(&notify, &syncCommit))
		require.Empty(t, notify, "rule: no outbox.notify left on a pooled session")
		require.Equal(t, "on", syncCommit, "rule: no synchronous_commit left on a pooled session")
	}

	// The relay's store commits its marks asynchronously, per transaction.
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		store, err := pgoutbox.NewStore(tx, pgoutbox.Config{AsynchronousCommit: true})
		require.NoError(t, err)
		evs, err := store.Claim(ctx, ports.ClaimParams{Owner: "pooler-test", Now: time.Now(), LeaseFor: time.Minute, Limit: 10})
		require.NoError(t, err)
		require.Len(t, evs, 3)
		var mode string
		require.NoError(t, tx.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&mode))
		require.Equal(t, "off", mode, "rule: the claim's transaction commits asynchronously")
		lost, err := store.Complete(ctx, "pooler-test", time.Now(), []ports.LeaseRef{{ID: evs[0].ID, Token: evs[0].Lease.Token}})
		require.NoError(t, err)
		require.Empty(t, lost)
		return nil
	})
	require.NoError(t, err)
	var syncCommit string
	require.NoError(t, db.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&syncCommit))
	require.Equal(t, "on", syncCommit)
}

// TestPoolerListenerIsDeaf: a LISTEN through the pooler never hears its
// probe: one WARN naming DATABASE_DIRECT_URL, Working false, and Notify
// every FallbackPoll instead.
func TestPoolerListenerIsDeaf(t *testing.T) {
	ctx := t.Context()
	tdb := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	pooled := testinfra.PoolerURL(t, tdb.URL)
	db, err := postgres.Open(ctx, postgres.Config{URL: pooled})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })

	var logs testinfra.LogBuffer
	var notified atomic.Int64
	l := postgres.NewListenerWith(postgres.ListenerConfig{URL: pooled, Channel: postgres.OutboxChannel,
		Notify: func() { notified.Add(1) }, Probe: probeThrough(db), ProbeTimeout: 500 * time.Millisecond,
		Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, l.Start(ctx))
	t.Cleanup(func() { _ = l.Stop(context.Background()) })
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "DATABASE_DIRECT_URL") }, 10*time.Second, 10*time.Millisecond,
		"rule: a deaf LISTEN is reported, naming the variable")
	require.False(t, l.Working())
	before := notified.Load()
	// Ten wakes take 0.5 s at the fallback's 50 ms and 5 s at the 500 ms
	// idle poll: a 4 s bound tells them apart with room for a busy machine.
	require.Eventually(t, func() bool { return notified.Load()-before >= 10 }, 4*time.Second, 10*time.Millisecond,
		"rule: the relay is woken every %s (50 ms) instead (got %d)", postgres.DefaultFallbackPoll, notified.Load()-before)
	require.Equal(t, 1, strings.Count(logs.String(), `"level":"WARN"`), "rule: one WARN: %s", logs.String())
}

func probeThrough(db *bun.DB) func(ctx context.Context, payload string) error {
	return func(ctx context.Context, payload string) error {
		_, err := db.ExecContext(ctx, "SELECT pg_notify(?, ?)", postgres.OutboxChannel, payload)
		return err
	}
}

// TestPoolerOpenErrors: what only a pooler refuses is explained too.
func TestPoolerOpenErrors(t *testing.T) {
	tdb := testinfra.NewDB(t, testinfra.DBOpts{})
	pooled := testinfra.PoolerURL(t, tdb.URL)
	var oe *postgres.OpenError
	_, err := postgres.Open(t.Context(), postgres.Config{URL: pooled, RuntimeParams: map[string]string{"outbox.notify": "off"}})
	require.ErrorAs(t, err, &oe)
	require.Contains(t, oe.Reason, "refused a startup parameter")
	require.Contains(t, oe.Error(), "unsupported startup parameter: outbox.notify")
	require.Contains(t, oe.Fix(), "remove that parameter from DATABASE_URL")

	_, err = postgres.Open(t.Context(), postgres.Config{URL: strings.Replace(pooled, "sslmode=disable", "sslmode=require", 1)})
	require.ErrorAs(t, err, &oe)
	require.Contains(t, oe.Reason, "does not offer TLS")
	require.Contains(t, oe.Fix(), "sslmode=disable in DATABASE_URL")
}
