package pgtasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgtasks"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
)

// newTaskTable creates a business-like task table with the DDL helper on a
// fresh database.
func newTaskTable(t *testing.T, table string) *bun.DB {
	t.Helper()
	db := testinfra.NewDB(t, testinfra.DBOpts{}).Bun
	ddl, err := pgtasks.TableDDL(table)
	require.NoError(t, err, "ddl for %s", table)
	_, err = db.ExecContext(t.Context(), ddl)
	require.NoError(t, err, "create %s", table)
	return db
}

func TestStoreContract(t *testing.T) {
	t.Parallel()

	caps := contracttests.TaskCaps{
		Outage: func(t *testing.T, _ ports.TaskStore) (ports.TaskStore, func()) {
			down, err := pgtasks.NewStore(testinfra.UnreachableDB(t), "tb_export_task")
			require.NoError(t, err)
			return down, func() {}
		},
	}
	contracttests.RunTaskStore(t, caps, func(t *testing.T) ports.TaskStore {
		t.Helper()
		store, err := pgtasks.NewStore(newTaskTable(t, "tb_export_task"), "tb_export_task")
		require.NoError(t, err)
		return store
	})
}

func TestStoreRefusesBadTableNames(t *testing.T) {
	t.Parallel()

	db := bun.IDB(&bun.DB{})
	for _, name := range []string{"", "Tb_task", "tb-task", "tb_task; DROP TABLE x", "public.tb_task", "1task", string(make([]byte, 51))} {
		_, err := pgtasks.NewStore(db, name)
		require.Error(t, err, "NewStore(%q) must be refused", name)
		_, err = pgtasks.TableDDL(name)
		require.Error(t, err, "TableDDL(%q) must be refused", name)
	}
	_, err := pgtasks.NewStore(db, "order") // a reserved word works: the name is quoted
	require.NoError(t, err)
	_, err = pgtasks.NewStore(nil, "tb_task")
	require.Error(t, err, "a nil db must be refused")
}

func TestTaskTableChecksRejectInvalidRows(t *testing.T) {
	t.Parallel()

	db := newTaskTable(t, "tb_check_task")
	ctx := t.Context()
	_, err := db.ExecContext(ctx, `INSERT INTO tb_check_task (id, total_count) VALUES ('ok', 3)`)
	require.NoError(t, err, "a valid pending row")
	for _, tc := range []struct{ name, sql string }{
		{"status outside 1..5", `UPDATE tb_check_task SET status = 6`},
		{"negative count", `UPDATE tb_check_task SET failed_count = -1`},
		{"success+failed above total", `UPDATE tb_check_task SET success_count = 2, failed_count = 2`},
		{"completed with undecided items", `UPDATE tb_check_task SET status = 3, success_count = 1, failed_count = 1`},
		{"processing without a lease", `UPDATE tb_check_task SET status = 2`},
		{"pending with a lease", `UPDATE tb_check_task SET lease_owner = 'w', lease_expires_at = now()`},
	} {
		_, err := db.ExecContext(ctx, tc.sql)
		require.Error(t, err, "rule: the table CHECKs must reject %s (%s)", tc.name, tc.sql)
		require.Contains(t, err.Error(), "23514", "%s: want check_violation", tc.name)
	}
	_, err = db.ExecContext(ctx, `UPDATE tb_check_task SET status = 3, success_count = 2, failed_count = 1, finished_at = now()`)
	require.NoError(t, err, "completed with every item decided is valid")
}

// TestColumnsEmbed shows the business path: its own model embeds
// TaskColumns, inserts the row in its transaction, and the store takes over.
func TestColumnsEmbed(t *testing.T) {
	t.Parallel()

	type exportTask struct {
		bun.BaseModel `bun:"table:tb_export_task"`
		ID            string `bun:"id,pk"`
		pgtasks.Columns
		FileName string `bun:"file_name"`
	}
	db := newTaskTable(t, "tb_export_task")
	ctx := t.Context()
	_, err := db.ExecContext(ctx, `ALTER TABLE tb_export_task ADD COLUMN file_name text NOT NULL`)
	require.NoError(t, err)
	now := time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)

	cols, err := pgtasks.NewColumns(2, now)
	require.NoError(t, err)
	_, err = pgtasks.NewColumns(-1, now)
	require.ErrorIs(t, err, tasks.ErrInvalidTask, "a negative total is refused")
	row := exportTask{ID: "exp-1", Columns: cols, FileName: "orders.csv"}
	require.NoError(t, db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewInsert().Model(&row).Exec(ctx)
		return err
	}))

	store, err := pgtasks.NewStore(db, "tb_export_task")
	require.NoError(t, err)
	claimed, err := store.Claim(ctx, "exp-1", "worker-a", time.Minute, now)
	require.NoError(t, err)
	_, err = store.RecordProgress(ctx, "exp-1", "worker-a", claimed.Lease.Token, 1, 1, now)
	require.NoError(t, err)
	_, err = store.Complete(ctx, "exp-1", "worker-a", claimed.Lease.Token, now.Add(time.Second))
	require.NoError(t, err)

	var got exportTask
	require.NoError(t, db.NewSelect().Model(&got).Where("id = ?", "exp-1").Scan(ctx))
	require.Equal(t, "orders.csv", got.FileName, "business columns are untouched")
	v := got.Task(got.ID).View()
	require.Equal(t, tasks.Completed, v.Status)
	require.Equal(t, "已完成", v.StatusName)
	require.Equal(t, [3]int64{2, 1, 1}, [3]int64{v.TotalCount, v.SuccessCount, v.FailedCount})
	require.Equal(t, 100, v.Progress)
}

func TestTaskTableContract(t *testing.T) {
	t.Parallel()
	contracttests.RunTaskRecovery(t, func(t *testing.T, deliver func(context.Context, string) error) ports.TaskTable {
		t.Helper()
		tt, err := pgtasks.NewTaskTable(newTaskTable(t, "tb_export_task"), "export", "tb_export_task",
			func(ctx context.Context, _ bun.IDB, id string) error { return deliver(ctx, id) })
		require.NoError(t, err)
		return tt
	})
}

// The delivery's writes commit with the recovery or not at all: a batch
// whose second delivery fails leaves no trace of the first.
func TestTaskTableDeliveryCommitsWithRecovery(t *testing.T) {
	t.Parallel()
	db := newTaskTable(t, "tb_export_task")
	ctx := t.Context()
	_, err := db.ExecContext(ctx, "CREATE TABLE tb_delivery (task_id text PRIMARY KEY)")
	require.NoError(t, err)
	fail := "b"
	tt, err := pgtasks.NewTaskTable(db, "export", "tb_export_task", func(ctx context.Context, tx bun.IDB, id string) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO tb_delivery VALUES (?)", id); err != nil {
			return err
		}
		if id == fail {
			return errors.New("refused")
		}
		return nil
	})
	require.NoError(t, err)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "b"} {
		_, err := tt.Store.Create(ctx, id, 1, t0)
		require.NoError(t, err)
		_, err = tt.Store.Claim(ctx, id, "crashed", time.Minute, t0)
		require.NoError(t, err)
	}
	count := func() (n int) {
		require.NoError(t, db.NewRaw("SELECT count(*) FROM tb_delivery").Scan(ctx, &n))
		return n
	}
	_, err = tt.Recover(ctx, t0.Add(time.Minute), 10)
	require.ErrorContains(t, err, `deliver task "b" of tb_export_task again`)
	require.Zero(t, count(), "rule: the first delivery rolled back with the batch")
	fail = ""
	ids, err := tt.Recover(ctx, t0.Add(time.Minute), 10)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "b"}, ids)
	require.Equal(t, 2, count(), "rule: the deliveries committed with the recovery")
	_, err = pgtasks.NewTaskTable(db, "export", "tb_export_task", nil)
	require.Error(t, err, "no deliver func")
}
