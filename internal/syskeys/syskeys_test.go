package syskeys_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/internal/syskeys"
)

func TestRegisterTwiceFails(t *testing.T) {
	t.Parallel()

	reg := sysconfig.NewRegistry()
	require.NoError(t, syskeys.Register(reg))
	for _, k := range []string{syskeys.RelayBatchSize, syskeys.RelayLeaseTTL, syskeys.RelayMaxAttempts, syskeys.AccessLogBodyBytes} {
		_, ok := reg.Lookup(k)
		require.True(t, ok, "key %s must be registered", k)
	}
	require.Error(t, syskeys.Register(reg), "duplicate registration must fail, never overwrite")
}

func TestStartupRead(t *testing.T) {
	t.Parallel()

	store := memory.NewConfigStore()
	v, alert, err := syskeys.Startup(t.Context(), store, syskeys.RelayBatchSize)
	require.NoError(t, err)
	require.Nil(t, alert, "no row is not a problem: the default applies")
	require.Equal(t, int64(500), v.Int())

	reg := sysconfig.NewRegistry()
	require.NoError(t, syskeys.Register(reg))
	spec, _ := reg.Lookup(syskeys.RelayBatchSize)
	_, err = store.Apply(t.Context(), sysconfig.Plan{Spec: spec, NewText: "250", NewVersion: 1}, ports.AuditRecord{Action: "test"}, time.Now())
	require.NoError(t, err)
	v, alert, err = syskeys.Startup(t.Context(), store, syskeys.RelayBatchSize)
	require.NoError(t, err)
	require.Nil(t, alert)
	require.Equal(t, int64(250), v.Int(), "the stored value wins")

	_, err = store.Apply(t.Context(), sysconfig.Plan{Spec: spec, NewText: "99999", BaseVersion: 1, NewVersion: 2}, ports.AuditRecord{Action: "test"}, time.Now())
	require.NoError(t, err)
	v, alert, err = syskeys.Startup(t.Context(), store, syskeys.RelayBatchSize)
	require.NoError(t, err)
	require.NotNil(t, alert, "an out-of-range stored value raises an alert")
	require.Equal(t, int64(500), v.Int(), "and never reaches the caller")

	store.SetDown(true)
	v, alert, err = syskeys.Startup(t.Context(), store, syskeys.RelayBatchSize)
	require.NoError(t, err)
	require.NotNil(t, alert)
	require.Equal(t, int64(500), v.Int())

	_, _, err = syskeys.Startup(t.Context(), store, "relay.delivery.unknown")
	require.ErrorIs(t, err, sysconfig.ErrKeyNotRegistered)
}
