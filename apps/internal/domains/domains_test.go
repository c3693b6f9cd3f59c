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

// Every domain in the list is named once and owns its migration set: the
// apps tell domains apart by name, migrate by set name.
func TestEveryDomainIsNamedOnce(t *testing.T) {
	t.Parallel()

	names, sets := map[string]bool{}, map[string]bool{}
	for _, d := range domains.All() {
		require.NotEmpty(t, d.Name, "a domain without a name: %+v", d)
		require.False(t, names[d.Name], "domain %s is listed twice", d.Name)
		names[d.Name] = true
		if d.Migrations.FS != nil {
			require.False(t, sets[d.Migrations.Name], "domain %s: migration set %q is another domain's", d.Name, d.Migrations.Name)
			sets[d.Migrations.Name] = true
		}
	}
	require.Len(t, domains.MigrationSets(), len(sets))
}
