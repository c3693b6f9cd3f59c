package contracttests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// ConfigStoreFixture is one isolated ConfigStore plus the two hooks the
// suite needs to check the audit half of the contract.
type ConfigStoreFixture struct {
	// Store is the store under test; it sees no other test's rows.
	Store ports.ConfigStore
	// Audits returns every audit record the store has durably written,
	// oldest first (Postgres: the audit events it appended).
	Audits func(t *testing.T) []ports.AuditRecord
	// FailNextAudit makes the store's next audit write fail, as a broken
	// audit writer would.
	FailNextAudit func()
	// Outage takes Store's backing service away (see Outage). Required:
	// the outage case fails without it.
	Outage Outage[ports.ConfigStore]
}

// RunConfigStore checks a ConfigStore against the contract documented on
// ports.ConfigStore. newStore must return a fresh, empty store per call.
func RunConfigStore(t *testing.T, newStore func(t *testing.T) ConfigStoreFixture) {
	t.Helper()

	t.Run("Get/NotFound", func(t *testing.T) {
		t.Parallel()
		b := newConfigBundle(t, newStore)

		_, err := b.store.Get(t.Context(), "suite.missing.key")
		require.ErrorIs(t, err, ports.ErrNotFound, "rule: Get of a key without a row returns ErrNotFound")
	})

	t.Run("Apply/InsertFirstVersion", func(t *testing.T) {
		t.Parallel()
		b := newConfigBundle(t, newStore)
		p := configPlan("suite.insert.key", "hello", 0, "admin-1")
		rec := configAudit(p, cfgT0)

		got, err := b.store.Apply(t.Context(), p, rec, cfgT0)
		require.NoError(t, err, "rule: Apply with BaseVersion 0 inserts the first version")
		requireStored(t, p.Row(cfgT0), got, "rule: Apply returns the row it wrote (version 1, updated_by the actor, updated_at now)")
		require.EqualValues(t, 1, got.Version, "rule: the first version is 1")
		requireStored(t, got, b.get(p.Spec.Key), "rule: Get returns what Apply wrote")
		requireAudits(t, []ports.AuditRecord{rec}, b.audits(), "rule: Apply writes the accepted audit record")
	})

	t.Run("Apply/UpdateWithVersion", func(t *testing.T) {
		t.Parallel()
		b := newConfigBundle(t, newStore)
		first := b.apply(configPlan("suite.update.key", "v1", 0, "admin-1"), cfgT0)
		p := configPlan(first.Key, "v2", first.Version, "admin-2")
		later := cfgT0.Add(time.Minute)
		rec := configAudit(p, later)

		got, err := b.store.Apply(t.Context(), p, rec, later)
		require.NoError(t, err, "rule: Apply with the current version as BaseVersion updates the row")
		require.EqualValues(t, 2, got.Version, "rule: an update writes BaseVersion+1")
		require.Equal(t, "v2", got.Value)
		require.Equal(t, "admin-2", got.UpdatedBy, "rule: updated_by is the updating actor")
		requireStored(t, got, b.get(p.Spec.Key), "rule: Get returns what Apply wrote")
		require.Len(t, b.audits(), 2, "rule: every accepted Apply writes one audit record")
		requireAudits(t, []ports.AuditRecord{rec}, b.audits()[1:], "rule: the update's audit record is written as given")
	})

	t.Run("Apply/VersionConflictWritesNothing", func(t *testing.T) {
		t.Parallel()
		b := newConfigBundle(t, newStore)
		v1 := b.apply(configPlan("suite.conflict.key", "v1", 0, "admin-1"), cfgT0)
		v2 := b.apply(configPlan(v1.Key, "v2", 1, "admin-1"), cfgT0.Add(time.Second))
		before := b.audits()

		cases := []struct {
			name   string
			plan   sysconfig.Plan
			actual int64
		}{
			{"StaleUpdate", configPlan(v1.Key, "stale", 1, "admin-2"), 2},
			{"FutureUpdate", configPlan(v1.Key, "future", 7, "admin-2"), 2},
			{"InsertOverExisting", configPlan(v1.Key, "again", 0, "admin-2"), 2},
			{"UpdateOfMissingRow", configPlan("suite.conflict.missing", "x", 1, "admin-2"), 0},
		}
		for _, tc := range cases {
			_, err := b.store.Apply(t.Context(), tc.plan, configAudit(tc.plan, cfgT0), cfgT0.Add(time.Hour))
			var vc *sysconfig.VersionConflictError
			require.ErrorAs(t, err, &vc, "%s: rule: a lost compare-and-set returns *sysconfig.VersionConflictError", tc.name)
			require.Equal(t, sysconfig.VersionConflictError{Key: tc.plan.Spec.Key, Expected: tc.plan.BaseVersion, Actual: tc.actual}, *vc,
				"%s: rule: the conflict carries the key, the expected and the actual version", tc.name)
		}
		requireStored(t, v2, b.get(v1.Key), "rule: a version conflict writes no row change")
		_, err := b.store.Get(t.Context(), "suite.conflict.missing")
		require.ErrorIs(t, err, ports.ErrNotFound, "rule: a version conflict creates no row")
		requireAudits(t, before, b.audits(), "rule: a version conflict writes no accepted audit record")
	})

	t.Run("Apply/ConcurrentUpdatesOneWinsPerVersion", func(t *testing.T) {
		t.Parallel()
		b := newConfigBundle(t, newStore)
		const n = 10

		race := func(key string, base int64) (winner string, conflicts int) {
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				wins []string
				errs []error
			)
			for i := range n {
				wg.Go(func() {
					p := configPlan(key, fmt.Sprintf("writer-%d", i), base, fmt.Sprintf("admin-%d", i))
					_, err := b.store.Apply(t.Context(), p, configAudit(p, cfgT0), cfgT0)
					mu.Lock()
					defer mu.Unlock()
					if err == nil {
						wins = append(wins, p.NewText)
						return
					}
					errs = append(errs, err)
				})
			}
			wg.Wait()
			require.Len(t, wins, 1, "key %s base %d: rule: exactly one of %d concurrent Applies on the same BaseVersion wins (errors: %v)", key, base, n, errs)
			for _, err := range errs {
				var vc *sysconfig.VersionConflictError
				require.ErrorAs(t, err, &vc, "key %s base %d: rule: every loser gets *sysconfig.VersionConflictError", key, base)
				require.EqualValues(t, base+1, vc.Actual, "key %s: rule: a loser sees the winner's version", key)
			}
			return wins[0], len(errs)
		}

		key := "suite.race.key"
		winner, _ := race(key, 0)
		require.Equal(t, winner, b.get(key).Value, "rule: the stored row is the winning insert")
		winner, _ = race(key, 1)
		got := b.get(key)
		require.Equal(t, winner, got.Value, "rule: the stored row is the winning update")
		require.EqualValues(t, 2, got.Version)
		require.Len(t, b.audits(), 2, "rule: only winners write accepted audit records")
	})

	t.Run("Apply/AuditFailureRollsBack", func(t *testing.T) {
		t.Parallel()
		b := newConfigBundle(t, newStore)
		insert := configPlan("suite.audit.first", "v1", 0, "admin-1")

		b.fx.FailNextAudit()
		_, err := b.store.Apply(t.Context(), insert, configAudit(insert, cfgT0), cfgT0)
		require.Error(t, err, "rule: Apply fails when its audit record cannot be written")
		_, err = b.store.Get(t.Context(), insert.Spec.Key)
		require.ErrorIs(t, err, ports.ErrNotFound, "rule: an insert rolls back when its audit write fails")

		v1 := b.apply(insert, cfgT0)
		update := configPlan(v1.Key, "v2", 1, "admin-2")
		b.fx.FailNextAudit()
		_, err = b.store.Apply(t.Context(), update, configAudit(update, cfgT0), cfgT0.Add(time.Minute))
		require.Error(t, err, "rule: Apply fails when its audit record cannot be written")
		var vc *sysconfig.VersionConflictError
		require.False(t, errors.As(err, &vc), "rule: an audit failure is not reported as a version conflict: %v", err)
		requireStored(t, v1, b.get(v1.Key), "rule: an update rolls back when its audit write fails")
		require.Len(t, b.audits(), 1, "rule: a failed audit write leaves no audit record")
	})

	t.Run("List/ByModuleSorted", func(t *testing.T) {
		t.Parallel()
		b := newConfigBundle(t, newStore)
		for _, key := range []string{"beta.x.two", "alpha.z.last", "beta.a.one", "alpha.a.first", "alpha.m.middle"} {
			b.apply(configPlan(key, "v", 0, "admin-1"), cfgT0)
		}

		cases := []struct {
			module string
			want   []string
		}{
			{"alpha", []string{"alpha.a.first", "alpha.m.middle", "alpha.z.last"}},
			{"beta", []string{"beta.a.one", "beta.x.two"}},
			{"", []string{"alpha.a.first", "alpha.m.middle", "alpha.z.last", "beta.a.one", "beta.x.two"}},
			{"gamma", nil},
		}
		for _, tc := range cases {
			rows, err := b.store.List(t.Context(), tc.module)
			require.NoError(t, err, "List(%q)", tc.module)
			var keys []string
			for _, r := range rows {
				keys = append(keys, r.Key)
			}
			require.Equal(t, tc.want, keys, "List(%q): rule: List returns the module's rows (all when module is \"\"), sorted by key", tc.module)
		}
	})

	t.Run("RecordRejected", func(t *testing.T) {
		t.Parallel()
		b := newConfigBundle(t, newStore)
		rec := ports.AuditRecord{
			Action: sysconfig.ActionUpdate, Actor: "admin-9", ResourceType: "system_config",
			ResourceID: "suite.rejected.key", Outcome: string(sysconfig.OutcomeRejected),
			Code: sysconfig.CodeReadOnly, Reason: "配置项为只读，不能通过接口修改", Before: "old", After: sysconfig.Mask,
			RequestID: "req-rejected-1", CorrelationID: "corr-rejected-1", At: cfgT0,
		}

		require.NoError(t, b.store.RecordRejected(t.Context(), rec), "rule: RecordRejected writes the audit record")
		requireAudits(t, []ports.AuditRecord{rec}, b.audits(), "rule: a rejected attempt leaves its audit record as given")
		_, err := b.store.Get(t.Context(), rec.ResourceID)
		require.ErrorIs(t, err, ports.ErrNotFound, "rule: RecordRejected writes no config row")
	})

	t.Run("Outage/EveryMethodUnavailableAndNothingChanges", func(t *testing.T) {
		t.Parallel()
		b := newConfigBundle(t, newStore)
		requireOutageHook(t, b.fx.Outage == nil, "ConfigStoreFixture.Outage")
		v1 := b.apply(configPlan("suite.outage.key", "v1", 0, "admin-1"), cfgT0)
		audits := b.audits()

		down, restore := b.fx.Outage(t, b.store)
		update := configPlan(v1.Key, "v2", v1.Version, "admin-2")
		insert := configPlan("suite.outage.new", "v1", 0, "admin-2")
		at := cfgT0.Add(time.Minute)
		requireUnavailable(t, map[string]outageCall{
			"Get":  func(ctx context.Context) error { _, err := down.Get(ctx, v1.Key); return err },
			"List": func(ctx context.Context) error { _, err := down.List(ctx, "suite"); return err },
			"Apply/Update": func(ctx context.Context) error {
				_, err := down.Apply(ctx, update, configAudit(update, at), at)
				return err
			},
			"Apply/Insert": func(ctx context.Context) error {
				_, err := down.Apply(ctx, insert, configAudit(insert, at), at)
				return err
			},
			"RecordRejected": func(ctx context.Context) error { return down.RecordRejected(ctx, configAudit(update, at)) },
		})

		restore()
		requireStored(t, v1, b.get(v1.Key), "after the outage: "+OutageRule)
		_, err := b.store.Get(t.Context(), insert.Spec.Key)
		require.ErrorIs(t, err, ports.ErrNotFound, "an Apply during the outage inserted %s: %s", insert.Spec.Key, OutageRule)
		requireAudits(t, audits, b.audits(), "after the outage, no audit record was written: "+OutageRule)
	})
}

// cfgT0 is the suite's fixed instant: whole seconds in UTC survive any
// store's precision.
var cfgT0 = time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)

type configBundle struct {
	t     *testing.T
	fx    ConfigStoreFixture
	store ports.ConfigStore
}

func newConfigBundle(t *testing.T, newStore func(t *testing.T) ConfigStoreFixture) *configBundle {
	t.Helper()
	fx := newStore(t)
	require.NotNil(t, fx.Store, "fixture: Store is required")
	require.NotNil(t, fx.Audits, "fixture: Audits is required")
	require.NotNil(t, fx.FailNextAudit, "fixture: FailNextAudit is required")
	return &configBundle{t: t, fx: fx, store: fx.Store}
}

func (b *configBundle) get(key string) sysconfig.Stored {
	b.t.Helper()
	s, err := b.store.Get(b.t.Context(), key)
	require.NoError(b.t, err, "get %s", key)
	return s
}

func (b *configBundle) apply(p sysconfig.Plan, now time.Time) sysconfig.Stored {
	b.t.Helper()
	s, err := b.store.Apply(b.t.Context(), p, configAudit(p, now), now)
	require.NoError(b.t, err, "apply %s at base %d", p.Spec.Key, p.BaseVersion)
	return s
}

func (b *configBundle) audits() []ports.AuditRecord {
	b.t.Helper()
	return b.fx.Audits(b.t)
}

// configPlan is an accepted plan writing text over base; the key's first
// segment is its module.
func configPlan(key, text string, base int64, actor string) sysconfig.Plan {
	module, _, _ := strings.Cut(key, ".")
	return sysconfig.Plan{
		Spec:        sysconfig.Spec{Key: key, Module: module, Type: sysconfig.TypeString, Description: "测试配置"},
		NewText:     text,
		BaseVersion: base,
		NewVersion:  base + 1,
		OldMasked:   "",
		NewMasked:   text,
		Decision:    sysconfig.UpdateDecision{Key: key, Actor: actor, Action: sysconfig.ActionUpdate, Outcome: sysconfig.OutcomeAccepted, Version: base + 1},
	}
}

var auditSeq atomic.Int64

// configAudit is the accepted audit record of p at at.
func configAudit(p sysconfig.Plan, at time.Time) ports.AuditRecord {
	n := auditSeq.Add(1)
	return ports.AuditRecord{
		Action: sysconfig.ActionUpdate, Actor: p.Decision.Actor, ResourceType: "system_config",
		ResourceID: p.Spec.Key, Outcome: string(sysconfig.OutcomeAccepted),
		Before: p.OldMasked, After: p.NewMasked,
		RequestID: fmt.Sprintf("req-config-%d", n), CorrelationID: fmt.Sprintf("corr-config-%d", n), At: at,
	}
}

// requireStored compares rows with times normalised to UTC.
func requireStored(t *testing.T, want, got sysconfig.Stored, rule string) {
	t.Helper()
	want.UpdatedAt, got.UpdatedAt = want.UpdatedAt.UTC(), got.UpdatedAt.UTC()
	require.Equal(t, want, got, rule)
}

// requireAudits compares audit records with times normalised to UTC.
func requireAudits(t *testing.T, want, got []ports.AuditRecord, rule string) {
	t.Helper()
	norm := func(rs []ports.AuditRecord) []ports.AuditRecord {
		out := make([]ports.AuditRecord, len(rs))
		for i, r := range rs {
			r.At = r.At.UTC()
			out[i] = r
		}
		return out
	}
	require.Equal(t, norm(want), norm(got), rule)
}
