package release

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
)

// DefaultBatchSize is the batch size of RunBackfill when none is given.
const DefaultBatchSize = 500

// BatchFunc processes, inside tx, up to limit source rows whose stable key
// sorts after the cursor after ("" before the first row), in key order, and
// returns the key of the last row it processed and how many it processed.
// n < limit means the backfill is complete. The key is a stable identity
// (a primary key, a config key), never a position, so rows added later are
// found wherever they sort; it is printed as progress, so it must be a safe
// identifier. Compare text keys bytewise (in SQL: COLLATE "C"). The batch
// must be idempotent per row (e.g. INSERT ... ON CONFLICT DO NOTHING), and
// its error must not quote row values (Postgres errors are made safe).
type BatchFunc func(ctx context.Context, tx bun.Tx, after string, limit int) (last string, n int, err error)

// IDBatchFunc is a BatchFunc over a bigint primary key (afterID 0 before the first row).
type IDBatchFunc func(ctx context.Context, tx bun.Tx, afterID int64, limit int) (lastID int64, n int, err error)

// ByID adapts an IDBatchFunc; the cursor is the decimal id.
func ByID(fn IDBatchFunc) BatchFunc {
	return func(ctx context.Context, tx bun.Tx, after string, limit int) (string, int, error) {
		var afterID int64
		if after != "" {
			var err error
			if afterID, err = strconv.ParseInt(after, 10, 64); err != nil {
				return "", 0, fmt.Errorf("cursor is not an id: %w", err)
			}
		}
		last, n, err := fn(ctx, tx, afterID, limit)
		if err != nil || n == 0 {
			return after, n, err
		}
		return strconv.FormatInt(last, 10), n, nil
	}
}

// Backfill is a named, resumable data migration run batch by batch.
type Backfill struct {
	// Name keys the checkpoint row in tb_backfill_checkpoint.
	Name string
	// Definition fingerprints the backfill's input set and logic (e.g. a
	// hash of the keys it seeds). When it differs from the one recorded in
	// the checkpoint, the backfill starts again from the first key, even if
	// it had finished: per-row idempotence makes that safe.
	Definition string
	// Batch does the work of one batch.
	Batch BatchFunc
}

// Progress is the checkpoint after a batch.
type Progress struct {
	Name     string `json:"name"`
	Batches  int64  `json:"batches"`
	Cursor   string `json:"cursor"`
	RowsDone int64  `json:"rows_done"`
	Finished bool   `json:"finished"`
	// Restarted says this run started from the first key because the
	// backfill's definition changed since the checkpoint was written.
	Restarted bool `json:"restarted,omitempty"`
}

// ErrNoCheckpointTable is returned by RunBackfill on a database where the
// foundation migrations have not been applied.
var ErrNoCheckpointTable = errors.New("tb_backfill_checkpoint does not exist: run `migrate up` first")

// RunBackfill runs b from its recorded checkpoint until a batch processes
// fewer than batchSize rows. Each batch and its checkpoint (the cursor, the
// definition) commit in one transaction, so an interruption loses at most
// the batch in flight and a rerun resumes after the last committed key. A
// finished backfill rerun with the same definition only looks for rows after
// its cursor; with a changed definition it runs again from the start.
// onBatch, when set, sees the checkpoint after every committed batch. The
// error holds no row values.
func RunBackfill(ctx context.Context, db *bun.DB, b Backfill, batchSize int, onBatch func(Progress)) (Progress, error) {
	p, err := runBackfill(ctx, db, b, batchSize, onBatch)
	return p, SafeError(err)
}

func runBackfill(ctx context.Context, db *bun.DB, b Backfill, batchSize int, onBatch func(Progress)) (Progress, error) {
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
			// The row lock serializes concurrent runs of the same backfill. A
			// checkpoint written before last_key existed resumes from last_id.
			var def string
			if err := tx.QueryRowContext(ctx, `SELECT coalesce(last_key, CASE WHEN last_id > 0 THEN last_id::text ELSE '' END),
				rows_done, batches, coalesce(definition_hash, '') FROM tb_backfill_checkpoint WHERE name = ? FOR UPDATE`,
				b.Name).Scan(&p.Cursor, &p.RowsDone, &p.Batches, &def); err != nil {
				return fmt.Errorf("read checkpoint: %w", err)
			}
			if def != b.Definition {
				p.Cursor, p.RowsDone, p.Batches, p.Restarted = "", 0, 0, true
			}
			last, n, err := b.Batch(ctx, tx, p.Cursor, batchSize)
			if err != nil {
				return fmt.Errorf("batch after cursor %q: %w", p.Cursor, err)
			}
			if n > 0 {
				p.Cursor, p.RowsDone, p.Batches = last, p.RowsDone+int64(n), p.Batches+1
			}
			p.Finished = n < batchSize
			_, err = tx.ExecContext(ctx, `UPDATE tb_backfill_checkpoint SET last_key = ?, definition_hash = ?, rows_done = ?, batches = ?,
				finished_at = CASE WHEN ? THEN now() END, updated_at = now() WHERE name = ?`,
				p.Cursor, b.Definition, p.RowsDone, p.Batches, p.Finished, b.Name)
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
// key exists (existing values are never touched). It walks the keys in
// sorted order after the checkpoint's cursor (the last seeded key), and its
// Definition is a hash of the key set, so a key registered later is seeded
// by the next run wherever it sorts.
func SeedSystemConfig(seeds []postgres.ConfigSeed) Backfill {
	sorted := slices.SortedFunc(slices.Values(seeds), func(a, b postgres.ConfigSeed) int { return cmp.Compare(a.Key, b.Key) })
	h := sha256.New()
	h.Write([]byte(SeedSystemConfigName + "/v2\n"))
	for _, s := range sorted {
		h.Write([]byte(s.Key + "\n"))
	}
	return Backfill{Name: SeedSystemConfigName, Definition: hex.EncodeToString(h.Sum(nil)),
		Batch: func(ctx context.Context, tx bun.Tx, after string, limit int) (string, int, error) {
			last, n := after, 0
			for i := sort.Search(len(sorted), func(i int) bool { return sorted[i].Key > after }); i < len(sorted) && n < limit; i++ {
				s := sorted[i]
				if _, err := tx.ExecContext(ctx, `INSERT INTO tb_system_config
					(config_key, config_value, value_type, module, description, readonly)
					VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (config_key) DO NOTHING`,
					s.Key, s.Value, s.Type, s.Module, s.Description, s.ReadOnly); err != nil {
					return "", 0, fmt.Errorf("seed config key %s: %w", s.Key, err)
				}
				last, n = s.Key, n+1
			}
			return last, n, nil
		}}
}
