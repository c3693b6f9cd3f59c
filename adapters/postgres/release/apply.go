package release

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
)

// Timeouts of every migration, overridable per file with a comment line
// "-- migrate:lock_timeout=2s" or "-- migrate:statement_timeout=1h".
const (
	// DefaultMigrationLockTimeout bounds how long one statement of a
	// migration waits for a table lock (SET LOCAL lock_timeout). Short, so
	// an ALTER queued behind a long transaction does not stall every
	// writer queued behind the ALTER.
	DefaultMigrationLockTimeout = 5 * time.Second
	// DefaultStatementTimeout bounds each migration (SET LOCAL statement_timeout).
	DefaultStatementTimeout = 15 * time.Minute
	// DefaultLockTries is how many times Up tries a migration whose
	// lock_timeout expired before it fails with code lock_timeout.
	DefaultLockTries = 5
	// DefaultLockBackoff is the pause after the first lock timeout; it
	// doubles after each further one, up to MaxLockBackoff.
	DefaultLockBackoff = time.Second
	// MaxLockBackoff caps the pause between tries.
	MaxLockBackoff = 15 * time.Second
)

// Codes of a MigrationError.
const (
	CodeLockTimeout      = "lock_timeout"
	CodeStatementTimeout = "statement_timeout"
	CodeDropNonEmpty     = "drop_nonempty"
	CodeMigrationFailed  = "migration_failed"
)

// UpOptions tune Up. Zero fields take the defaults above.
type UpOptions struct {
	// LockTimeout bounds the wait for the advisory migration lock
	// (DefaultLockTimeout); exceeding it is ErrLockTimeout.
	LockTimeout time.Duration
	// LockTries and LockBackoff bound the retries of a migration that hit
	// its lock_timeout (SQLSTATE 55P03).
	LockTries   int
	LockBackoff time.Duration
	// OnRetry, when set, is told before each pause (for logs).
	OnRetry func(version string, try int, pause time.Duration)
	// Strict runs the pre-flight check in strict mode (CheckOptions.Strict).
	Strict bool
}

func (o UpOptions) withDefaults() UpOptions {
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.LockTries <= 0 {
		o.LockTries = DefaultLockTries
	}
	if o.LockBackoff <= 0 {
		o.LockBackoff = DefaultLockBackoff
	}
	return o
}

// MigrationError is a pending migration that failed; its transaction
// rolled back and it is not recorded. Its message names the version, the
// code, the SQLSTATE and schema names, never a row value.
type MigrationError struct {
	Version string `json:"version"`
	// Code is lock_timeout, statement_timeout, drop_nonempty or migration_failed.
	Code     string `json:"code"`
	SQLState string `json:"sqlstate,omitempty"`
	// Object is a safe identifier: the table or column of drop_nonempty.
	Object string `json:"object,omitempty"`
	Tries  int    `json:"tries"`
	// Timeout is the lock_timeout or statement_timeout that expired.
	Timeout string `json:"timeout,omitempty"`
	err     error
}

func (e *MigrationError) Error() string {
	switch e.Code {
	case CodeLockTimeout:
		return fmt.Sprintf("migration %s: lock_timeout: another transaction held a lock it needs for longer than lock_timeout=%s on each of %d tries; "+
			"find the blocker (pg_stat_activity, pg_locks), let it finish or end it, then rerun", e.Version, e.Timeout, e.Tries)
	case CodeStatementTimeout:
		return fmt.Sprintf("migration %s: statement_timeout: it ran longer than statement_timeout=%s; make the change cheaper "+
			"(e.g. ADD CONSTRAINT ... NOT VALID, then VALIDATE in a later migration) or raise it with -- migrate:statement_timeout=", e.Version, e.Timeout)
	case CodeDropNonEmpty:
		return fmt.Sprintf("migration %s: drop_nonempty: %s holds rows (written since the check); migrations never drop data", e.Version, e.Object)
	}
	return fmt.Sprintf("migration %s: %s: %s; its transaction rolled back and it is not recorded: fix the cause and rerun",
		e.Version, e.Code, safeError(e.err))
}

func (e *MigrationError) Unwrap() error { return e.err }

// errDropNonEmpty is found by the in-transaction guard of a drop.
type errDropNonEmpty struct{ target dropTarget }

func (e *errDropNonEmpty) Error() string { return e.target.Object() + " holds rows" }

// apply runs the pending migrations in version order, stopping at the first
// failure, and returns the versions applied. reh is check's rehearsal: what
// each migration touches.
func apply(ctx context.Context, db *bun.DB, sets []Set, reh *Rehearsal, pending []string, opts UpOptions) ([]string, error) {
	applied := []string{}
	if len(pending) == 0 {
		return applied, nil
	}
	migs, err := listMigrations(sets)
	if err != nil {
		return applied, err
	}
	if err := initMigrationTable(ctx, db); err != nil {
		return applied, fmt.Errorf("%w: init migration tables: %w", ErrApplyFailed, err)
	}
	var group int64
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(group_id), 0) + 1 FROM bun_migrations`).Scan(&group); err != nil {
		return applied, fmt.Errorf("%w: read migration groups: %w", ErrApplyFailed, err)
	}
	for _, m := range migs {
		if !slices.Contains(pending, m.Version) {
			continue
		}
		f, err := readMigration(m)
		if err != nil {
			return applied, fmt.Errorf("%w: %w", ErrApplyFailed, err)
		}
		if err := applyWithRetry(ctx, db, m, reh.Step(m.Version), f, group, opts); err != nil {
			return applied, fmt.Errorf("%w: %w", ErrApplyFailed, err)
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}

// initMigrationTable creates bun's migration tables as bun's Migrator.Init
// does, so `status`, `down` and bun itself keep reading them.
func initMigrationTable(ctx context.Context, db *bun.DB) error {
	ms, err := newMigrations(nil)
	if err != nil {
		return err
	}
	if err := postgres.NewMigrator(db, ms).Init(ctx); err != nil {
		return err
	}
	return initUnfinished(ctx, db)
}

// applyWithRetry runs m, trying again with a doubling pause while it fails
// on its lock_timeout, at most opts.LockTries times.
func applyWithRetry(ctx context.Context, db *bun.DB, m migration, step *Step, f sqlFile, group int64, opts UpOptions) error {
	lockT, stmtT := f.LockTimeout, f.StatementTimeout
	if lockT == 0 {
		lockT = DefaultMigrationLockTimeout
	}
	if stmtT == 0 {
		stmtT = DefaultStatementTimeout
	}
	pause := opts.LockBackoff
	for try := 1; ; try++ {
		err := applyOnce(ctx, db, m, step, f, group, lockT, stmtT)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		me := &MigrationError{Version: m.Version, Code: CodeMigrationFailed, Tries: try, err: err}
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			me.SQLState = pe.Code
		}
		var dn *errDropNonEmpty
		switch {
		case errors.As(err, &dn):
			me.Code, me.Object = CodeDropNonEmpty, dn.target.Object()
		case isSQLState(err, "55P03"):
			me.Code, me.Timeout = CodeLockTimeout, lockT.String()
		case isSQLState(err, "57014"):
			me.Code, me.Timeout = CodeStatementTimeout, stmtT.String()
		}
		if me.Code != CodeLockTimeout || try >= opts.LockTries {
			return me
		}
		if opts.OnRetry != nil {
			opts.OnRetry(m.Version, try, pause)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, MaxLockBackoff)
	}
}

// applyOnce runs one migration file and records it in bun_migrations. A .tx
// file runs in one transaction with SET LOCAL timeouts, its drops guarded,
// and is recorded in that same transaction, so it is either applied and
// recorded or neither. A file without .tx runs statement by statement on
// one connection (for CREATE INDEX CONCURRENTLY); it must be safe to rerun.
// It is recorded as started (UnfinishedTable) before its first statement;
// when it was already, the INVALID indexes it left are dropped first (see
// resume.go). Recording it as applied removes that record in one
// transaction.
func applyOnce(ctx context.Context, db *bun.DB, m migration, step *Step, f sqlFile, group int64, lockT, stmtT time.Duration) error {
	settings := fmt.Sprintf("SET %%s lock_timeout = '%dms'; SET %%s statement_timeout = '%dms'", lockT.Milliseconds(), stmtT.Milliseconds())
	record := func(db bun.IConn) error {
		_, err := db.ExecContext(ctx, `INSERT INTO bun_migrations (name, group_id, migrated_at) VALUES (?, ?, current_timestamp)`, m.Version, group)
		if err != nil {
			return fmt.Errorf("record migration: %w", err)
		}
		return nil
	}
	if !strings.HasSuffix(m.Up, ".tx.up.sql") {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		defer conn.ExecContext(context.WithoutCancel(ctx), `RESET lock_timeout; RESET statement_timeout`) //nolint:errcheck // best effort before the connection returns to the pool
		if _, err := conn.ExecContext(ctx, fmt.Sprintf(settings, "SESSION", "SESSION")); err != nil {
			return err
		}
		for _, d := range f.Drops {
			if has, err := holdsRows(ctx, conn, d); err != nil || has {
				return errors.Join(err, dropErr(has, d))
			}
		}
		unfinished, err := unfinishedVersions(ctx, conn)
		if err != nil {
			return err
		}
		if unfinished[m.Version] {
			if err := dropInvalidLeftovers(ctx, conn, step); err != nil {
				return err
			}
		} else if err := markUnfinished(ctx, conn, m.Version); err != nil {
			return err
		}
		for _, st := range oneByOne(f.Queries) {
			if _, err := conn.ExecContext(ctx, st); err != nil {
				return err
			}
		}
		return conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := record(tx); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM `+UnfinishedTable+` WHERE name = ?`, m.Version)
			return err
		})
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(settings, "LOCAL", "LOCAL")); err != nil {
			return err
		}
		// Rows may have been written since Check looked: take the lock the
		// drop needs anyway, then look again.
		for _, d := range f.Drops {
			var exists bool
			if err := tx.QueryRowContext(ctx, `SELECT to_regclass(?) IS NOT NULL`, quoteQualified(d.Table)).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				continue
			}
			if _, err := tx.ExecContext(ctx, `LOCK TABLE `+quoteQualified(d.Table)+` IN ACCESS EXCLUSIVE MODE`); err != nil {
				return err
			}
			has, err := holdsRows(ctx, tx, d)
			if err != nil {
				return err
			}
			if has {
				return dropErr(true, d)
			}
		}
		for _, q := range f.Queries {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return record(tx)
	})
}

// oneByOne splits the parts of a file without .tx into the statements to
// send one at a time, for up and down alike: a multi-statement string is an
// implicit transaction, where CREATE INDEX CONCURRENTLY and DROP INDEX
// CONCURRENTLY are refused (SQLSTATE 25001).
func oneByOne(queries []string) []string {
	var out []string
	for _, q := range queries {
		for _, st := range SplitStatements(q) {
			out = append(out, st.SQL)
		}
	}
	return out
}

func dropErr(has bool, d dropTarget) error {
	if !has {
		return nil
	}
	return &errDropNonEmpty{target: d}
}
