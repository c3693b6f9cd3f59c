package pgconfig_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
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

// pgx reads timestamptz in the process's time zone; the store hands back
// UTC, so the config API's updated_at reads alike on a host in China time
// (TZ=Asia/Shanghai) and on a UTC one, and like every other time the API
// shows.
func TestStoredTimesAreUTC(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
	store, err := pgconfig.NewStore(db, pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{}))
	require.NoError(t, err)
	at := time.Date(2030, 1, 1, 8, 0, 0, 0, time.FixedZone("CST", 8*3600))
	plan := sysconfig.Plan{
		Spec:    sysconfig.Spec{Key: "tz.demo.key", Module: "tz", Type: sysconfig.TypeString, Description: "time zone"},
		NewText: "x", NewVersion: 1, NewMasked: "x",
		Decision: sysconfig.UpdateDecision{Key: "tz.demo.key", Actor: "admin", Action: sysconfig.ActionUpdate, Outcome: sysconfig.OutcomeAccepted, Version: 1},
	}
	audit := ports.AuditRecord{Action: sysconfig.ActionUpdate, Actor: "admin", ResourceType: "system_config", ResourceID: "tz.demo.key",
		Outcome: string(sysconfig.OutcomeAccepted), RequestID: "req-tz", At: at}
	applied, err := store.Apply(t.Context(), plan, audit, at)
	require.NoError(t, err)
	got, err := store.Get(t.Context(), "tz.demo.key")
	require.NoError(t, err)
	for name, s := range map[string]sysconfig.Stored{"Apply": applied, "Get": got} {
		require.Same(t, time.UTC, s.UpdatedAt.Location(), "%s: updated_at in UTC", name)
		require.True(t, at.Equal(s.UpdatedAt), "%s: the same instant", name)
		b, err := json.Marshal(s.UpdatedAt)
		require.NoError(t, err)
		require.Equal(t, `"2030-01-01T00:00:00Z"`, string(b), name)
	}
}
