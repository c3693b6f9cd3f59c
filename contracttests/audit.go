package contracttests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
)

// AuditInboxFixture is one isolated audit inbox.
type AuditInboxFixture struct {
	// Inbox is the implementation under test.
	Inbox ports.AuditInbox
	// Outage is required: see Outage.
	Outage Outage[ports.AuditInbox]
}

// RunAuditInbox checks a ports.AuditInbox against the contract on the port.
func RunAuditInbox(t *testing.T, newFixture func(t *testing.T) AuditInboxFixture) {
	t.Helper()

	rec := func(action, actor, resource string, at time.Time) ports.AuditRecord {
		return ports.AuditRecord{Action: action, Actor: actor, ResourceType: "system_config", ResourceID: resource,
			Outcome: "accepted", Reason: "调整上限", Before: "1", After: "2", RequestID: "req-1", CorrelationID: "corr-1", At: at}
	}

	t.Run("Keep/OnceAndListedNewestFirst", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		first, second := uuid.NewString(), uuid.NewString()
		require.NoError(t, f.Inbox.Keep(t.Context(), first, rec("config.update", "alice", "a.b.c", t0)))
		require.NoError(t, f.Inbox.Keep(t.Context(), second, rec("config.update", "bob", "a.b.d", t0.Add(time.Minute))))
		require.NoError(t, f.Inbox.Keep(t.Context(), first, rec("config.update", "mallory", "x.y.z", t0)),
			"rule: keeping the same event again is a success")
		got, err := f.Inbox.ListAudit(t.Context(), ports.AuditFilter{})
		require.NoError(t, err)
		require.Len(t, got, 2, "rule: a redelivered event is kept once")
		require.Equal(t, second, got[0].EventID, "rule: newest first")
		require.Equal(t, first, got[1].EventID)
		want := rec("config.update", "alice", "a.b.c", t0)
		requireTime(t, want.At, got[1].At, "recorded at")
		got[1].At = want.At
		require.Equal(t, want, got[1].AuditRecord, "rule: every field is kept as given, and the first keep wins")
		require.Nil(t, got[1].TakenAt)
	})

	t.Run("ListAudit/Filters", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		ids := map[string]string{}
		for i, r := range []ports.AuditRecord{
			rec("config.update", "alice", "a.b.c", t0),
			rec("config.update", "bob", "a.b.c", t0.Add(time.Minute)),
			rec("outbox.replay", "alice", "batch-1", t0.Add(2*time.Minute)),
		} {
			id := uuid.NewString()
			ids[fmt.Sprint(i)] = id
			require.NoError(t, f.Inbox.Keep(t.Context(), id, r))
		}
		for name, tc := range map[string]struct {
			f    ports.AuditFilter
			want []string
		}{
			"Actor":    {ports.AuditFilter{Actor: "alice"}, []string{ids["2"], ids["0"]}},
			"Action":   {ports.AuditFilter{Action: "outbox.replay"}, []string{ids["2"]}},
			"Resource": {ports.AuditFilter{ResourceType: "system_config", ResourceID: "a.b.c"}, []string{ids["1"], ids["0"]}},
			"Since":    {ports.AuditFilter{Since: t0.Add(time.Minute)}, []string{ids["2"], ids["1"]}},
			"Until":    {ports.AuditFilter{Until: t0.Add(time.Minute)}, []string{ids["0"]}},
			"Limit":    {ports.AuditFilter{Limit: 1}, []string{ids["2"]}},
		} {
			got, err := f.Inbox.ListAudit(t.Context(), tc.f)
			require.NoError(t, err, name)
			var gotIDs []string
			for _, e := range got {
				gotIDs = append(gotIDs, e.EventID)
			}
			require.Equal(t, tc.want, gotIDs, "filter %s %+v", name, tc.f)
		}
	})

	t.Run("Outage/EveryMethodUnavailableAndNothingChanges", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		requireOutageHook(t, f.Outage == nil, "AuditInboxFixture.Outage")
		kept := uuid.NewString()
		require.NoError(t, f.Inbox.Keep(t.Context(), kept, rec("config.update", "alice", "a.b.c", t0)))
		down, restore := f.Outage(t, f.Inbox)
		requireUnavailable(t, map[string]outageCall{
			"Keep": func(ctx context.Context) error {
				return down.Keep(ctx, uuid.NewString(), rec("config.update", "bob", "a.b.c", t0))
			},
			"ListAudit": func(ctx context.Context) error { _, err := down.ListAudit(ctx, ports.AuditFilter{}); return err },
		})
		restore()
		got, err := f.Inbox.ListAudit(t.Context(), ports.AuditFilter{})
		require.NoError(t, err)
		require.Len(t, got, 1, "after the outage: %s", OutageRule)
		require.Equal(t, kept, got[0].EventID)
	})
}
