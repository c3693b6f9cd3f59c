package pgtasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/ports"
)

// NewTaskTable registers table with the relay's task-recovery sweep as
// name. Its Recover returns a batch of expired tasks to Pending and calls
// deliver for each in the same transaction, so a task is never Pending
// without its delivery request committed: deliver writes through tx (e.g.
// appends the domain's "task requested" outbox event). An error from
// deliver rolls the batch back; the tasks stay expired for the next pass,
// in this process or another.
func NewTaskTable(db *bun.DB, name, table string, deliver func(ctx context.Context, tx bun.IDB, id string) error) (ports.TaskTable, error) {
	if db == nil || deliver == nil {
		return ports.TaskTable{}, errors.New("pgtasks: NewTaskTable needs a db and a deliver func")
	}
	store, err := NewStore(db, table)
	if err != nil {
		return ports.TaskTable{}, err
	}
	recoverFn := func(ctx context.Context, now time.Time, limit int) ([]string, error) {
		var ids []string
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var err error
			if ids, err = (&Store{db: tx, table: store.table}).RecoverExpired(ctx, now, limit); err != nil {
				return err
			}
			for _, id := range ids {
				if err := deliver(ctx, tx, id); err != nil {
					return fmt.Errorf("deliver task %q of %s again: %w", id, table, pgerr.Translate(err))
				}
			}
			return nil
		})
		if err != nil {
			// RecoverExpired's and deliver's errors say what failed; a
			// begin or commit error is translated here.
			return nil, pgerr.Translate(err)
		}
		return ids, nil
	}
	return ports.TaskTable{Name: name, Store: store, Recover: recoverFn}, nil
}
