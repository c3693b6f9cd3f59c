package release_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/release"
)

func seeds(keys ...string) []postgres.ConfigSeed {
	out := make([]postgres.ConfigSeed, 0, len(keys))
	for _, k := range keys {
		out = append(out, postgres.ConfigSeed{Key: k, Value: "1", Type: "int", Module: "seedtest", Description: "测试"})
	}
	return out
}

// A key registered after the backfill finished sorts into the middle of the
// key list; rerunning the backfill seeds it and leaves the others alone.
func TestSeedSystemConfigSeedsKeyRegisteredLater(t *testing.T) {
	t.Parallel()

	db := migrated(t)
	ctx := t.Context()
	const a, b, c = "seedtest.keys.a", "seedtest.keys.b", "seedtest.keys.c"
	p, err := release.RunBackfill(ctx, db.Bun, release.SeedSystemConfig(seeds(a, c)), 10, nil)
	require.NoError(t, err)
	require.True(t, p.Finished)
	exec(t, db.Bun, `UPDATE tb_system_config SET config_value = '7', version = 2 WHERE config_key = '`+a+`'`)

	p, err = release.RunBackfill(ctx, db.Bun, release.SeedSystemConfig(seeds(a, b, c)), 10, nil)
	require.NoError(t, err)
	require.True(t, p.Finished)
	var got []string
	require.NoError(t, db.Bun.NewRaw(`SELECT config_key || '=' || config_value || '@' || version FROM tb_system_config
		WHERE module = 'seedtest' ORDER BY config_key`).Scan(ctx, &got))
	require.Equal(t, []string{a + "=7@2", b + "=1@1", c + "=1@1"}, got, "b seeded; a (operator-changed) and c untouched")

	p, err = release.RunBackfill(ctx, db.Bun, release.SeedSystemConfig(seeds(a, b, c)), 10, nil)
	require.NoError(t, err)
	require.True(t, p.Finished, "a rerun with the same keys is a no-op")
}

// An interrupted seed resumes after the last committed key: committed keys
// are not visited again.
func TestSeedSystemConfigResumesAfterLastCommittedKey(t *testing.T) {
	t.Parallel()

	db := migrated(t)
	keys := []string{"seedtest.keys.e", "seedtest.keys.a", "seedtest.keys.d", "seedtest.keys.b", "seedtest.keys.c"}
	ctx, cancel := context.WithCancel(t.Context())
	_, err := release.RunBackfill(ctx, db.Bun, release.SeedSystemConfig(seeds(keys...)), 2, func(release.Progress) { cancel() })
	require.Error(t, err, "interrupted after the first batch")
	var n int
	require.NoError(t, db.Bun.NewRaw(`SELECT count(*) FROM tb_system_config WHERE config_key IN ('seedtest.keys.a', 'seedtest.keys.b')`).Scan(t.Context(), &n))
	require.Equal(t, 2, n, "the first batch is the two smallest keys")
	require.NoError(t, db.Bun.NewRaw(`SELECT count(*) FROM tb_system_config WHERE module = 'seedtest'`).Scan(t.Context(), &n))
	require.Equal(t, 2, n)
	// An operator removes a committed key: a resume that restarted from the
	// first key would bring it back.
	exec(t, db.Bun, `DELETE FROM tb_system_config WHERE config_key = 'seedtest.keys.a'`)

	var batches int
	p, err := release.RunBackfill(t.Context(), db.Bun, release.SeedSystemConfig(seeds(keys...)), 2, func(release.Progress) { batches++ })
	require.NoError(t, err)
	require.True(t, p.Finished)
	require.EqualValues(t, 5, p.RowsDone)
	require.Equal(t, 2, batches, "c,d then e")
	var got []string
	require.NoError(t, db.Bun.NewRaw(`SELECT config_key FROM tb_system_config WHERE module = 'seedtest' ORDER BY config_key`).Scan(t.Context(), &got))
	require.Equal(t, []string{"seedtest.keys.b", "seedtest.keys.c", "seedtest.keys.d", "seedtest.keys.e"}, got)
}
