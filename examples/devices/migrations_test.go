package devices_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/examples/devices"
)

// The set goes through the real release step (check, up, verify) after
// the foundation, owns every object it creates alone, and rolls back to
// the foundation while its tables are empty.
func TestMigrationsReleaseUpAndDown(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{}).Bun
	sets := []release.Set{release.Foundation(), devices.Migrations()}

	man, err := release.BuildManifest(t.Context(), db, sets)
	require.NoError(t, err)
	for _, obj := range man.Created("20261201200001") {
		require.Contains(t, obj, "ex_devices_", "rule: every object is prefixed")
		require.Len(t, man.Owners(obj), 1, "object %s", obj)
	}
	require.NotEmpty(t, man.Created("20261201200003"))

	up, err := release.Up(t.Context(), db, sets, 10*time.Second)
	require.NoError(t, err)
	require.True(t, up.Check.OK(), "pre-flight findings %+v", up.Check.Findings)
	require.NotNil(t, up.Verify)
	require.True(t, up.Verify.OK(), "post-flight findings %+v", up.Verify.Findings)
	require.Contains(t, up.Applied, "20261201200007")

	down, err := release.Down(t.Context(), db, sets, "20261201000015", 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, []string{"20261201200007", "20261201200006", "20261201200005", "20261201200004", "20261201200003", "20261201200002", "20261201200001"}, down.RolledBack)
	var n int
	require.NoError(t, db.NewRaw("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'ex_devices_%'").Scan(t.Context(), &n))
	require.Zero(t, n)
}
