package pgoutbox_test

import (
	"context"
	"encoding/json"
	"errors"
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

func TestEventAuditWriter(t *testing.T) {
	t.Parallel()

	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	ids := []string{"0b7e6f2a-5c1d-4e8f-9a3b-2c4d6e8f0a1b", "1c8f7a3b-6d2e-4f9a-8b4c-3d5e7f9a1b2c"}

	type auditRow struct {
		EventType     string `bun:"event_type"`
		EventID       string `bun:"event_id"`
		AggregateType string `bun:"aggregate_type"`
		AggregateID   string `bun:"aggregate_id"`
		ResourceType  string `bun:"resource_type"`
		ResourceID    string `bun:"resource_id"`
		RequestID     string `bun:"request_id"`
		CorrelationID string `bun:"correlation_id"`
		Payload       string `bun:"payload"`
	}

	type testBundle struct {
		db *bun.DB
		w  *pgoutbox.EventAuditWriter
	}
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		next := 0
		w := pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{
			NewIDFunc: func() string { next++; return ids[next-1] },
			NowFunc:   func() time.Time { return now },
		})
		return &testBundle{db: testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun, w: w}
	}
	rows := func(t *testing.T, db *bun.DB) []auditRow {
		t.Helper()
		var out []auditRow
		err := db.NewRaw(`SELECT event_type, event_id::text AS event_id, aggregate_type, aggregate_id, resource_type,
			resource_id, request_id, correlation_id, payload::text AS payload FROM tb_outbox_event ORDER BY id`).Scan(t.Context(), &out)
		require.NoError(t, err)
		return out
	}

	t.Run("EventCarriesRecord", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := ports.AuditRecord{
			Action: "config.update", Actor: "admin-1", ResourceType: "system_config", ResourceID: "pay.limit.max",
			Outcome: "accepted", Before: "1", After: "2", RequestID: "req-1",
		}

		require.NoError(t, b.w.WriteAudit(t.Context(), b.db, rec))

		got := rows(t, b.db)
		require.Len(t, got, 1, "one record appends one event")
		require.Equal(t, auditRow{
			EventType: outbox.AuditEventType, EventID: ids[0], AggregateType: "system_config", AggregateID: "pay.limit.max",
			ResourceType: "system_config", ResourceID: "pay.limit.max", RequestID: "req-1", CorrelationID: "req-1",
			Payload: got[0].Payload,
		}, got[0], "aggregate and resource are the record's resource; correlation defaults to the request id")
		var payload map[string]any
		require.NoError(t, json.Unmarshal([]byte(got[0].Payload), &payload))
		require.Equal(t, "pay.limit.max", payload["resource_id"], "payload fields are snake_case: %s", got[0].Payload)
		require.Equal(t, "admin-1", payload["actor"])
		require.Equal(t, now.Format(time.RFC3339), payload["at"], "a zero At is stamped with the writer's clock")
	})

	t.Run("GeneratesMissingRequestID", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := ports.AuditRecord{Action: "config.update", ResourceType: "system_config", ResourceID: "pay.limit.max", CorrelationID: "corr-9"}

		require.NoError(t, b.w.WriteAudit(t.Context(), b.db, rec))

		got := rows(t, b.db)
		require.Len(t, got, 1)
		require.Equal(t, ids[0], got[0].RequestID, "a record without request id gets a generated one")
		require.Equal(t, "corr-9", got[0].CorrelationID, "a given correlation id is kept")
	})

	t.Run("RollsBackWithCallerTx", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		errBusiness := errors.New("business step failed")
		rec := ports.AuditRecord{Action: "x.y", ResourceType: "order", ResourceID: "o-1", RequestID: "req-2"}

		err := b.db.RunInTx(t.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
			if err := b.w.WriteAudit(ctx, tx, rec); err != nil {
				return err
			}
			return errBusiness
		})
		require.ErrorIs(t, err, errBusiness)
		require.Empty(t, rows(t, b.db), "the audit event is written in the caller's transaction and rolls back with it")
	})

	t.Run("RefusesRecordWithoutResource", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		err := b.w.WriteAudit(t.Context(), b.db, ports.AuditRecord{Action: "x.y", RequestID: "req-3"})
		var ve *outbox.ValidationError
		require.ErrorAs(t, err, &ve, "a record without resource cannot form an outbox event")
		require.Empty(t, rows(t, b.db))
	})
}
