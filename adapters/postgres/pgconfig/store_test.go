package pgconfig_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func TestConfigStore(t *testing.T) {
	t.Parallel()

	contracttests.RunConfigStore(t, func(t *testing.T) contracttests.ConfigStoreFixture {
		db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
		audit := &failingAudit{next: pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{})}
		store, err := pgconfig.NewStore(db, audit)
		require.NoError(t, err)
		return contracttests.ConfigStoreFixture{
			Store:         store,
			Audits:        func(t *testing.T) []ports.AuditRecord { return auditEvents(t, db) },
			FailNextAudit: func() { audit.failNext.Store(true) },
			Outage: func(t *testing.T, _ ports.ConfigStore) (ports.ConfigStore, func()) {
				down, err := pgconfig.NewStore(testinfra.UnreachableDB(t), audit)
				require.NoError(t, err)
				return down, func() {}
			},
		}
	})
}

func TestNewStoreValidates(t *testing.T) {
	t.Parallel()

	_, err := pgconfig.NewStore(nil, pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{}))
	require.Error(t, err, "a nil db is refused")
	_, err = pgconfig.NewStore(&bun.DB{}, nil)
	require.Error(t, err, "a nil AuditWriter is refused")
}

// errAuditDown is what failingAudit returns once armed.
var errAuditDown = errors.New("audit writer down (test)")

// failingAudit wraps an AuditWriter and fails its next write once armed,
// as a broken audit team writer would.
type failingAudit struct {
	next     pgoutbox.AuditWriter
	failNext atomic.Bool
}

func (f *failingAudit) WriteAudit(ctx context.Context, db bun.IDB, rec ports.AuditRecord) error {
	if f.failNext.CompareAndSwap(true, false) {
		return errAuditDown
	}
	return f.next.WriteAudit(ctx, db, rec)
}

// auditEvents decodes every committed audit.recorded outbox event, oldest first.
func auditEvents(t *testing.T, db *bun.DB) []ports.AuditRecord {
	t.Helper()
	var payloads []string
	err := db.NewRaw(`SELECT payload::text FROM tb_outbox_event WHERE event_type = ? ORDER BY id`,
		outbox.AuditEventType).Scan(t.Context(), &payloads)
	require.NoError(t, err, "read audit events")
	out := make([]ports.AuditRecord, 0, len(payloads))
	for _, p := range payloads {
		var ap outbox.AuditPayload
		require.NoError(t, json.Unmarshal([]byte(p), &ap), "decode audit payload %s", p)
		out = append(out, ports.AuditRecord(ap))
	}
	return out
}
