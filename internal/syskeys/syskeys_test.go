package syskeys_test

import (
	"testing"

	"github.com/stretchr/testify/require"

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
