package pgoutbox_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// benchEvents builds n events up front so the benchmarks time the database.
func benchEvents(b *testing.B, n int) []outbox.Event {
	b.Helper()
	evs := make([]outbox.Event, n)
	for i := range evs {
		evs[i] = newOutboxEvent(b)
	}
	return evs
}

// BenchmarkAppendOutbox is one business transaction appending one event.
func BenchmarkAppend(b *testing.B) {
	db := testinfra.NewDB(b, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	evs := benchEvents(b, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return pgoutbox.Append(ctx, tx, evs[i])
		})
		require.NoError(b, err)
	}
}

// BenchmarkPlainInsert is the baseline for BenchmarkAppendOutbox: the same
// values as a single-row INSERT into a table of the same width with only a
// primary key and a unique event_id (no partial indexes, no NOTIFY trigger).
func BenchmarkPlainInsert(b *testing.B) {
	db := testinfra.NewDB(b, testinfra.DBOpts{}).Bun
	ctx := context.Background()
	_, err := db.ExecContext(ctx, `CREATE TABLE tb_bench_plain (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event_id uuid NOT NULL UNIQUE,
		event_type varchar(100) NOT NULL, payload_version int NOT NULL,
		aggregate_type varchar(64) NOT NULL, aggregate_id varchar(128) NOT NULL,
		resource_type varchar(64) NOT NULL, resource_id varchar(128) NOT NULL,
		business_key varchar(256), request_id varchar(128) NOT NULL, correlation_id varchar(128) NOT NULL,
		payload jsonb NOT NULL, status smallint NOT NULL, retry_count int NOT NULL,
		next_attempt_at timestamptz NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`)
	require.NoError(b, err)
	evs := benchEvents(b, b.N)
	b.ResetTimer()
	for i := range b.N {
		ev := evs[i]
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO tb_bench_plain (event_id, event_type, payload_version,
				aggregate_type, aggregate_id, resource_type, resource_id, business_key, request_id, correlation_id,
				payload, status, retry_count, next_attempt_at, created_at, updated_at)
				VALUES (?::uuid, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?::jsonb, 1, 0, ?, ?, ?)`,
				ev.EventID, ev.EventType, ev.PayloadVersion, ev.AggregateType, ev.AggregateID, ev.ResourceType,
				ev.ResourceID, ev.BusinessKey, ev.RequestID, ev.CorrelationID, string(ev.Payload),
				ev.NextAttemptAt, ev.CreatedAt, ev.UpdatedAt)
			return err
		})
		require.NoError(b, err)
	}
}

// seedDue bulk-inserts n due Pending events server-side.
func seedDue(b *testing.B, db *bun.DB, n int) {
	b.Helper()
	_, err := db.ExecContext(context.Background(), `INSERT INTO tb_outbox_event (event_id, event_type, payload_version,
		aggregate_type, aggregate_id, resource_type, resource_id, request_id, correlation_id, payload,
		next_attempt_at, created_at, updated_at)
		SELECT gen_random_uuid(), 'order.placed', 1, 'order', g::text, 'order', g::text, 'req-' || g, 'req-' || g,
			jsonb_build_object('order_id', g, 'amount_cents', 1299), ?, ?, ?
		FROM generate_series(1, ?) AS g`, outboxT0, outboxT0, outboxT0, n)
	require.NoError(b, err)
	_, err = db.ExecContext(context.Background(), "VACUUM ANALYZE tb_outbox_event")
	require.NoError(b, err)
}

const benchBatch = 100

// BenchmarkClaimComplete is one relay round: claim 100 due events, then
// complete the 100. The events/s metric is the relay's store-side ceiling.
func BenchmarkClaimComplete(b *testing.B) {
	db := testinfra.NewDB(b, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(b, err)
	seedDue(b, db, b.N*benchBatch)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		claimComplete(b, ctx, store, "relay-0")
	}
	b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkClaimCompleteParallel runs the same rounds from GOMAXPROCS
// relays at once, which is how SKIP LOCKED is meant to scale.
func BenchmarkClaimCompleteParallel(b *testing.B) {
	db := testinfra.NewDB(b, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
	require.NoError(b, err)
	seedDue(b, db, b.N*benchBatch)
	ctx := context.Background()
	var relays atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		owner := fmt.Sprintf("relay-%d", relays.Add(1))
		for pb.Next() {
			claimComplete(b, ctx, store, owner)
		}
	})
	b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "events/s")
}

func claimComplete(b *testing.B, ctx context.Context, store *pgoutbox.Store, owner string) {
	now := outboxT0.Add(time.Hour)
	evs, err := store.Claim(ctx, ports.ClaimParams{Owner: owner, Limit: benchBatch, LeaseFor: time.Minute, Now: now})
	if err != nil || len(evs) != benchBatch {
		b.Errorf("claim %d: got %d, err %v", benchBatch, len(evs), err)
		return
	}
	refs := make([]ports.LeaseRef, len(evs))
	for i, ev := range evs {
		refs[i] = ports.LeaseRef{ID: ev.ID, Token: ev.Lease.Token}
	}
	if lost, err := store.Complete(ctx, owner, now, refs); err != nil || len(lost) > 0 {
		b.Errorf("complete %d: lost %v, err %v", len(refs), lost, err)
	}
}
