package release

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
)

// DefaultBatchSize is the batch size of RunBackfill when none is given.
const DefaultBatchSize = 500

// BatchFunc processes up to limit source rows whose stable primary key is
// greater than afterID, inside tx, and returns the largest key it processed
// and how many rows it processed. n == 0 means the backfill is complete.
// It must be idempotent per row (e.g. INSERT ... ON CONFLICT DO NOTHING).
type BatchFunc func(ctx context.Context, tx bun.Tx, afterID int64, limit int) (lastID int64, n int, err error)

// Backfill is a named, resumable data migration run batch by batch.
type Backfill struct {
	// Name keys the checkpoint row in tb_backfill_checkpoint.
	Name string
	// Batch does the work of one batch.
	Batch BatchFunc
}

// Progress is the checkpoint after a batch.
type Progress struct {
	Name     string `json:"name"`
	Batches  int64  `json:"batches"`
	LastID   int64  `json:"last_id"`
	RowsDone int64  `json:"rows_done"`
	Finished bool   `json:"finished"`
}

// ErrNoCheckpointTable is returned by RunBackfill on a database where the
// foundation migrations have not been applied.
var ErrNoCheckpointTable = errors.New("tb_backfill_checkpoint does not exist: run `migrate up` first")

// RunBackfill runs b from its recorded checkpoint until a batch processes
// fewer than batchSize rows. Each batch and its checkpoint update commit in
// one transaction, so an interruption loses at most the batch in flight and
// a rerun resumes without repeating committed batches. onBatch, when set,
// sees the checkpoint after every committed batch.
func RunBackfill(ctx context.Context, db *bun.DB, b Backfill, batchSize int, onBatch func(Progress)) (Progress, error) {
	p := Progress{Name: b.Name}
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	ok, err := tableExists(ctx, db, "tb_backfill_checkpoint")
	if err != nil {
		return p, err
	}
	if !ok {
		return p, ErrNoCheckpointTable
	}
	for !p.Finished {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tb_backfill_checkpoint (name) VALUES (?) ON CONFLICT (name) DO NOTHING`, b.Name); err != nil {
				return fmt.Errorf("create checkpoint: %w", err)
			}
			// The row lock serializes concurrent runs of the same backfill.
			if err := tx.QueryRowContext(ctx, `SELECT last_id, rows_done, batches FROM tb_backfill_checkpoint WHERE name = ? FOR UPDATE`,
				b.Name).Scan(&p.LastID, &p.RowsDone, &p.Batches); err != nil {
				return fmt.Errorf("read checkpoint: %w", err)
			}
			last, n, err := b.Batch(ctx, tx, p.LastID, batchSize)
			if err != nil {
				return fmt.Errorf("batch after id %d: %w", p.LastID, err)
			}
			if n > 0 {
				p.LastID, p.RowsDone, p.Batches = last, p.RowsDone+int64(n), p.Batches+1
			}
			p.Finished = n < batchSize
			_, err = tx.ExecContext(ctx, `UPDATE tb_backfill_checkpoint SET last_id = ?, rows_done = ?, batches = ?,
				finished_at = CASE WHEN ? THEN now() END, updated_at = now() WHERE name = ?`,
				p.LastID, p.RowsDone, p.Batches, p.Finished, b.Name)
			if err != nil {
				return fmt.Errorf("update checkpoint: %w", err)
			}
			return nil
		})
		if err != nil {
			p.Finished = false
			return p, fmt.Errorf("backfill %s: %w", b.Name, err)
		}
		if onBatch != nil {
			onBatch(p)
		}
	}
	return p, nil
}

// SeedSystemConfigName is the name of the SeedSystemConfig backfill.
const SeedSystemConfigName = "seed-system-config"

// SeedSystemConfig inserts each registered key with its default unless the
// key exists (existing values are never touched). The stable key of a seed
// is its 1-based position in seeds, so append new keys at the end.
func SeedSystemConfig(seeds []postgres.ConfigSeed) Backfill {
	return Backfill{Name: SeedSystemConfigName, Batch: func(ctx context.Context, tx bun.Tx, afterID int64, limit int) (int64, int, error) {
		n := 0
		for i := afterID; i < int64(len(seeds)) && n < limit; i++ {
			s := seeds[i]
			if _, err := tx.ExecContext(ctx, `INSERT INTO tb_system_config
				(config_key, config_value, value_type, module, description, readonly)
				VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (config_key) DO NOTHING`,
				s.Key, s.Value, s.Type, s.Module, s.Description, s.ReadOnly); err != nil {
				return 0, 0, fmt.Errorf("seed config key %s: %w", s.Key, err)
			}
			n++
		}
		return afterID + int64(n), n, nil
	}}
}
