package configsvc_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

type testBundle struct {
	now    time.Time
	reg    *sysconfig.Registry
	store  *memory.ConfigStore
	cache  *memory.ConfigCache
	svc    *configsvc.Service
	mu     sync.Mutex
	alerts []sysconfig.Alert
}

func (b *testBundle) alertCodes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, a := range b.alerts {
		out = append(out, a.Code)
	}
	return out
}

func i64(n int64) *int64 { return &n }

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), reg: sysconfig.NewRegistry()}
	require.NoError(t, b.reg.Register(
		sysconfig.Spec{Key: "pay.limit.daily", Module: "pay", Type: sysconfig.TypeInt, Default: "100", Min: i64(1), Max: i64(1000), Description: "每日限额"},
		sysconfig.Spec{Key: "pay.channel.secret", Module: "pay", Type: sysconfig.TypeString, Default: "none", Sensitive: true, Description: "渠道密钥"},
		sysconfig.Spec{Key: "pay.channel.code", Module: "pay", Type: sysconfig.TypeString, Default: "wx", ReadOnly: true, Description: "渠道代码"},
	))
	b.store = memory.NewConfigStore()
	b.cache = memory.NewConfigCache(func() time.Time { return b.now })
	svc, err := configsvc.New(b.reg, b.store, b.cache, ports.ClockFunc(func() time.Time { return b.now }), configsvc.Options{
		AlertFunc: func(_ context.Context, a sysconfig.Alert) { b.mu.Lock(); b.alerts = append(b.alerts, a); b.mu.Unlock() },
	})
	require.NoError(t, err)
	b.svc = svc
	return b
}

func update(t *testing.T, b *testBundle, key, raw string, version *int64) (sysconfig.View, error) {
	t.Helper()
	return b.svc.Update(t.Context(), sysconfig.UpdateRequest{Key: key, Raw: json.RawMessage(raw), ExpectedVersion: version, Actor: "admin-1"},
		configsvc.Meta{RequestID: "req-12345678"})
}

func TestUpdateAuditsEveryAttempt(t *testing.T) {
	t.Parallel()

	b := setup(t)
	v, err := update(t, b, "pay.limit.daily", "200", nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), v.Version)

	_, err = update(t, b, "pay.limit.daily", "5000", nil)
	require.ErrorAs(t, err, new(*sysconfig.ValueError))
	_, err = update(t, b, "pay.unknown.key", "1", nil)
	require.ErrorIs(t, err, sysconfig.ErrKeyNotRegistered)
	_, err = update(t, b, "pay.channel.code", `"ali"`, nil)
	require.ErrorIs(t, err, sysconfig.ErrReadOnly)
	_, err = update(t, b, "pay.limit.daily", "300", i64(7))
	require.ErrorAs(t, err, new(*sysconfig.VersionConflictError))
	require.NoError(t, b.svc.RecordForbidden(t.Context(), "pay.limit.daily", "user-9", configsvc.Meta{}))
	require.NoError(t, b.svc.RecordRejected(t.Context(), "pay.limit.daily", "admin-1", "UNSUPPORTED_MEDIA_TYPE", "不支持的 Content-Type",
		configsvc.Meta{RequestID: "req-415"}))

	var outcomes []string
	for _, a := range b.store.Audits() {
		outcomes = append(outcomes, a.Outcome+":"+a.Code)
		require.Equal(t, "system_config", a.ResourceType)
	}
	require.Equal(t, []string{
		"accepted:", "rejected:CONFIG_VALUE_INVALID", "rejected:CONFIG_KEY_NOT_REGISTERED",
		"rejected:CONFIG_KEY_READONLY", "rejected:CONFIG_VERSION_CONFLICT", "rejected:FORBIDDEN",
		"rejected:UNSUPPORTED_MEDIA_TYPE",
	}, outcomes)
	last := b.store.Audits()[len(outcomes)-1]
	require.Equal(t, "admin-1", last.Actor)
	require.Equal(t, "pay.limit.daily", last.ResourceID)
	require.Equal(t, "req-415", last.RequestID)
	require.Equal(t, sysconfig.ActionUpdate, last.Action)
}

func TestRecordRejectedNeedsActorAndCode(t *testing.T) {
	t.Parallel()
	tests := []struct{ actor, code string }{{"", "REQUEST_INVALID"}, {"admin-1", ""}}
	for _, tt := range tests {
		b := setup(t)
		err := b.svc.RecordRejected(t.Context(), "pay.limit.daily", tt.actor, tt.code, "x", configsvc.Meta{})
		require.ErrorIs(t, err, configsvc.ErrAuditIncomplete, "actor %q code %q", tt.actor, tt.code)
		require.Empty(t, b.store.Audits(), "actor %q code %q", tt.actor, tt.code)
	}
}

func TestSensitiveValueNeverLeaves(t *testing.T) {
	t.Parallel()

	b := setup(t)
	v, err := update(t, b, "pay.channel.secret", `"sk-live-very-secret"`, nil)
	require.NoError(t, err)
	out, _ := json.Marshal(v)
	require.NotContains(t, string(out), "sk-live-very-secret")
	for _, a := range b.store.Audits() {
		require.NotContains(t, a.After+a.Before, "sk-live-very-secret")
	}
	got, err := b.svc.Value(t.Context(), "pay.channel.secret")
	require.NoError(t, err)
	require.Equal(t, "sk-live-very-secret", got.Str(), "business code reads the real value")
}

func TestValueReadsThroughCacheAndInvalidates(t *testing.T) {
	t.Parallel()

	b := setup(t)
	got, err := b.svc.Value(t.Context(), "pay.limit.daily")
	require.NoError(t, err)
	require.Equal(t, int64(100), got.Int(), "no row: registered default")

	_, err = update(t, b, "pay.limit.daily", "200", nil)
	require.NoError(t, err)
	got, err = b.svc.Value(t.Context(), "pay.limit.daily")
	require.NoError(t, err)
	require.Equal(t, int64(200), got.Int())
	cached, err := b.cache.Get(t.Context(), "pay.limit.daily")
	require.NoError(t, err, "a read refills the cache")
	require.Equal(t, int64(1), cached.Version)

	_, err = update(t, b, "pay.limit.daily", "300", i64(1))
	require.NoError(t, err)
	_, err = b.cache.Get(t.Context(), "pay.limit.daily")
	require.ErrorIs(t, err, ports.ErrNotFound, "an update invalidates the cached row")
	got, err = b.svc.Value(t.Context(), "pay.limit.daily")
	require.NoError(t, err)
	require.Equal(t, int64(300), got.Int())
}

func TestCacheDownReadsAndUpdatesStayCorrect(t *testing.T) {
	t.Parallel()

	b := setup(t)
	b.cache.SetDown(true)
	_, err := update(t, b, "pay.limit.daily", "250", nil)
	require.NoError(t, err, "a failed invalidation keeps the committed update")
	require.Contains(t, b.alertCodes(), configsvc.CodeInvalidationFailed)
	got, err := b.svc.Value(t.Context(), "pay.limit.daily")
	require.NoError(t, err)
	require.Equal(t, int64(250), got.Int(), "reads fall back to the store")
}

func TestBrokenStoredValueFallsBack(t *testing.T) {
	t.Parallel()

	b := setup(t)
	_, err := update(t, b, "pay.limit.daily", "200", nil)
	require.NoError(t, err)
	got, err := b.svc.Value(t.Context(), "pay.limit.daily")
	require.NoError(t, err)
	require.Equal(t, int64(200), got.Int())

	// Someone writes garbage behind the API's back.
	spec, _ := b.reg.Lookup("pay.limit.daily")
	_, err = b.store.Apply(t.Context(), sysconfig.Plan{Spec: spec, NewText: "lots", BaseVersion: 1, NewVersion: 2}, ports.AuditRecord{Action: "test"}, b.now)
	require.NoError(t, err)
	require.NoError(t, b.cache.Invalidate(t.Context(), "pay.limit.daily", 2, time.Minute))

	got, err = b.svc.Value(t.Context(), "pay.limit.daily")
	require.NoError(t, err)
	require.Equal(t, int64(200), got.Int(), "the last verified value is used, never the broken one")
	require.Contains(t, b.alertCodes(), sysconfig.CodeStoredValueInvalid)

	_, err = b.svc.Value(t.Context(), "pay.unknown.key")
	require.True(t, errors.Is(err, sysconfig.ErrKeyNotRegistered))
}

func TestListShowsRegisteredAndUnregistered(t *testing.T) {
	t.Parallel()

	b := setup(t)
	_, err := update(t, b, "pay.limit.daily", "200", nil)
	require.NoError(t, err)
	ghost := sysconfig.Spec{Key: "pay.legacy.flag", Module: "pay", Type: sysconfig.TypeBool, Default: "true"}
	_, err = b.store.Apply(t.Context(), sysconfig.Plan{Spec: ghost, NewText: "true", NewVersion: 1}, ports.AuditRecord{Action: "test"}, b.now)
	require.NoError(t, err)

	views, err := b.svc.List(t.Context(), "pay")
	require.NoError(t, err)
	var keys []string
	for _, v := range views {
		keys = append(keys, v.Key)
		if v.Key == "pay.legacy.flag" {
			require.False(t, v.Registered)
			require.True(t, v.ReadOnly, "unregistered keys are shown read-only")
		}
	}
	require.Equal(t, []string{"pay.channel.code", "pay.channel.secret", "pay.legacy.flag", "pay.limit.daily"}, keys)
}

func TestRejectedAuditFailureRaisesAlert(t *testing.T) {
	t.Parallel()

	b := setup(t)
	b.store.FailNextAudit()
	_, err := update(t, b, "pay.limit.daily", "5000", nil)
	require.ErrorAs(t, err, new(*sysconfig.ValueError), "the caller still gets the rejection")
	require.Contains(t, b.alertCodes(), configsvc.CodeAuditFailed)
}
