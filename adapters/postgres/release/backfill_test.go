package release_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/release"
)

// copyBackfill copies tb_test_src into tb_test_dst (which has no unique
// constraint, so a repeated batch would show up as duplicates). failAt > 0
// makes that call fail after it has written its rows.
func copyBackfill(failAt int) (release.Backfill, *int) {
	calls := 0
	return release.Backfill{Name: "copy-src", Batch: release.ByID(func(ctx context.Context, tx bun.Tx, afterID int64, limit int) (int64, int, error) {
		calls++
		var ids []int64
		if err := tx.NewRaw(`INSERT INTO tb_test_dst (src_id) SELECT id FROM tb_test_src WHERE id > ? ORDER BY id LIMIT ? RETURNING src_id`,
			afterID, limit).Scan(ctx, &ids); err != nil {
			return 0, 0, err
		}
		if calls == failAt {
			return 0, 0, errors.New("injected interruption")
		}
		var last int64
		for _, id := range ids {
			last = max(last, id)
		}
		return last, len(ids), nil
	})}, &calls
}

func TestBackfillResumesAfterInterruption(t *testing.T) {
	t.Parallel()

	db := migrated(t)
	exec(t, db.Bun, `CREATE TABLE tb_test_src (id bigint PRIMARY KEY)`)
	exec(t, db.Bun, `CREATE TABLE tb_test_dst (src_id bigint NOT NULL)`)
	exec(t, db.Bun, `INSERT INTO tb_test_src SELECT generate_series(1, 23)`)
	ctx := t.Context()

	bf, _ := copyBackfill(3)
	var seen []release.Progress
	p, err := release.RunBackfill(ctx, db.Bun, bf, 5, func(p release.Progress) { seen = append(seen, p) })
	require.ErrorContains(t, err, "injected interruption")
	require.Len(t, seen, 2, "two batches committed before the failure")
	require.Equal(t, "10", p.Cursor)
	var dst, done int64
	require.NoError(t, db.Bun.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM tb_test_dst), (SELECT rows_done FROM tb_backfill_checkpoint WHERE name = 'copy-src')`).Scan(&dst, &done))
	require.EqualValues(t, 10, dst, "the failed batch rolled back with its checkpoint")
	require.EqualValues(t, 10, done)

	bf, calls := copyBackfill(0)
	p, err = release.RunBackfill(ctx, db.Bun, bf, 5, nil)
	require.NoError(t, err)
	require.True(t, p.Finished)
	require.Equal(t, 3, *calls, "resume from id 10: batches 11-15, 16-20, 21-23")
	require.EqualValues(t, 23, p.RowsDone)
	var total, distinct int64
	require.NoError(t, db.Bun.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT src_id) FROM tb_test_dst`).Scan(&total, &distinct))
	require.EqualValues(t, 23, total, "every source row copied exactly once")
	require.Equal(t, total, distinct)

	p, err = release.RunBackfill(ctx, db.Bun, bf, 5, nil)
	require.NoError(t, err)
	require.EqualValues(t, 23, p.RowsDone, "a rerun of a finished backfill adds nothing")
}

func TestBackfillNeedsCheckpointTable(t *testing.T) {
	t.Parallel()

	db := emptyDB(t)
	bf, _ := copyBackfill(0)
	_, err := release.RunBackfill(t.Context(), db.Bun, bf, 5, nil)
	require.ErrorIs(t, err, release.ErrNoCheckpointTable)
}
