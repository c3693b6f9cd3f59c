package main_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/ports"
)

// REGRESSION: the shipped relay had no handler for the
// template's own audit.recorded events, so Asynq retried them for weeks
// and the rows then failed. The default relay (worker enabled) keeps each
// record in tb_audit_record, delivers the event without a retry, and
// `relay audit list` finds it by actor.
func TestE2EAuditRecordsAreKeptByTheDefaultRelay(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	ctx := t.Context()

	writer := pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{})
	at := time.Now().UTC().Truncate(time.Second)
	require.NoError(t, writer.WriteAudit(ctx, w.db.Bun, ports.AuditRecord{
		Action: "config.update", Actor: "admin-7", ResourceType: "system_config", ResourceID: "relay.delivery.batch_size",
		Outcome: "accepted", Reason: "调大批量", Before: "500", After: "600", RequestID: "req-audit-1", At: at,
	}))
	w.startRelay("relay-audit", "WORKER_ENABLED=true")

	w.waitCount(1, `SELECT count(*) FROM tb_audit_record WHERE actor = 'admin-7' AND action = 'config.update' AND after_value = '600'`)
	w.waitCount(1, `SELECT count(*) FROM tb_outbox_event WHERE event_type = 'audit.recorded' AND status = 3 AND retry_count = 0`)
	require.Zero(t, w.count(`SELECT count(*) FROM tb_outbox_event WHERE status = 4`), "no failed rows")

	out, errOut, code := w.runCLI("audit", "list", "--actor", "admin-7", "--json")
	require.Equal(t, 0, code, "audit list: %s", errOut)
	var entries []struct {
		Action, Actor, ResourceID, After string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &entries), "audit list output: %s", out)
	require.Len(t, entries, 1, "%s", out)
	require.Equal(t, "relay.delivery.batch_size", entries[0].ResourceID)
	require.Equal(t, "600", entries[0].After)

	_, errOut, code = w.runCLI("audit", "list", "--since", "yesterday")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "RFC 3339")
}
