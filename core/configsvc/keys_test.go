package configsvc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/sysconfig"
)

func TestRegisterTemplateKeysTwiceFails(t *testing.T) {
	t.Parallel()

	reg := sysconfig.NewRegistry()
	require.NoError(t, configsvc.RegisterTemplateKeys(reg))
	for _, k := range []string{configsvc.KeyRelayBatchSize, configsvc.KeyRelayLeaseTTL, configsvc.KeyRelayMaxAttempts, configsvc.KeyAccessLogBodyBytes} {
		_, ok := reg.Lookup(k)
		require.True(t, ok, "key %s must be registered", k)
	}
	require.Error(t, configsvc.RegisterTemplateKeys(reg), "duplicate registration must fail, never overwrite")
}

// The registered keys take their default and range from the relay itself.
func TestTemplateKeysShareTheRelaysRanges(t *testing.T) {
	t.Parallel()

	reg := sysconfig.NewRegistry()
	require.NoError(t, configsvc.RegisterTemplateKeys(reg))
	for key, want := range map[string][3]int64{
		configsvc.KeyRelayBatchSize:   {relay.DefaultBatchSize, relay.MinBatchSize, relay.MaxBatchSize},
		configsvc.KeyRelayLeaseTTL:    {int64(relay.DefaultLeaseFor / time.Second), int64(relay.MinLeaseFor / time.Second), int64(relay.MaxLeaseFor / time.Second)},
		configsvc.KeyRelayMaxAttempts: {relay.DefaultMaxAttempts, relay.MinMaxAttempts, relay.MaxMaxAttempts},
	} {
		spec, _ := reg.Lookup(key)
		def, err := spec.Parse(spec.Default)
		require.NoError(t, err, key)
		require.Equal(t, want, [3]int64{def.Int(), *spec.Min, *spec.Max}, "key %s: default, min, max", key)
	}
}

// A process without a cache (the relay at start) reads through the
// service: the stored value when valid, else the default with an alert.
func TestValueWithoutCache(t *testing.T) {
	t.Parallel()

	store := memory.NewConfigStore()
	reg := sysconfig.NewRegistry()
	require.NoError(t, configsvc.RegisterTemplateKeys(reg))
	var alerts []string
	svc, err := configsvc.New(reg, store, nil, ports.ClockFunc(time.Now), configsvc.Options{
		AlertFunc: func(_ context.Context, a sysconfig.Alert) { alerts = append(alerts, a.Code) },
	})
	require.NoError(t, err)
	read := func() int64 {
		v, err := svc.Value(t.Context(), configsvc.KeyRelayBatchSize)
		require.NoError(t, err)
		return v.Int()
	}
	require.Equal(t, int64(500), read(), "no row: the default applies")
	require.Empty(t, alerts, "no row is not a problem")

	spec, _ := reg.Lookup(configsvc.KeyRelayBatchSize)
	_, err = store.Apply(t.Context(), sysconfig.Plan{Spec: spec, NewText: "250", NewVersion: 1}, ports.AuditRecord{Action: "test"}, time.Now())
	require.NoError(t, err)
	require.Equal(t, int64(250), read(), "the stored value wins")

	store.SetDown(true)
	require.Equal(t, int64(250), read(), "an outage serves the last verified value")
	require.NotEmpty(t, alerts, "and raises an alert")

	_, err = svc.Value(t.Context(), "relay.delivery.unknown")
	require.ErrorIs(t, err, sysconfig.ErrKeyNotRegistered)
}
