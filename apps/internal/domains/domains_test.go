package domains_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/core/configsvc"
)

// The registry holds the template's keys and every domain's, once.
func TestRegistryHoldsEveryKey(t *testing.T) {
	t.Parallel()

	reg, err := domains.Registry()
	require.NoError(t, err)
	for _, spec := range append(configsvc.TemplateSpecs(), domains.ConfigSpecs()...) {
		got, ok := reg.Lookup(spec.Key)
		require.True(t, ok, "key %s is registered", spec.Key)
		require.Equal(t, spec.Default, got.Default, "key %s", spec.Key)
	}
}
