package pgtasks

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/lease"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
)

// taskRow is the scan target of every Store statement.
type taskRow struct {
	ID string `bun:"id"`
	Columns
}

// taskColumns lists the columns every statement returns explicitly: a
// business table has more.
const taskColumns = `id::text AS id, status, total_count, success_count, failed_count, lease_owner,
	lease_token, lease_expires_at, started_at, finished_at, updated_at, created_at, error_code, error_message`

const taskReturning = ` RETURNING ` + taskColumns

// taskHeldWhere is the guard of every write by a lease holder: the task is
// still Processing under this owner and claim token, and the lease is live
// (lease.Lease.Check). Args: id, owner, token, now. It, taskClaimSQL and
// taskRecoverSQL are the SQL form of the rules core/lease and
// core/tasks.Task state in Go (and adapters/memory runs);
// contracttests.RunTaskStore runs against both stores and holds them
// together, so change both.
const taskHeldWhere = ` WHERE id = ? AND status = 2 AND lease_owner = ? AND lease_token = ? AND lease_expires_at > ?`

const (
	taskCreateSQL = `INSERT INTO ? (id, status, total_count, success_count, failed_count, lease_token, updated_at, created_at)
	VALUES (?, 1, ?, 0, 0, 0, ?, ?)` + taskReturning

	taskSelectSQL = `SELECT ` + taskColumns + ` FROM ? WHERE id = ?`

	// taskClaimSQL takes a Pending task or an expired Processing lease (expired
	// at the instant of expiry). Concurrent claims queue on the row lock and
	// re-check the WHERE, so exactly one wins.
	taskClaimSQL = `UPDATE ? SET status = 2, lease_owner = ?, lease_token = lease_token + 1, lease_expires_at = ?,
	started_at = COALESCE(started_at, ?), updated_at = ?
	WHERE id = ? AND (status = 1 OR (status = 2 AND lease_expires_at <= ?))` + taskReturning

	taskRenewSQL = `UPDATE ? SET lease_expires_at = ?, updated_at = ?` + taskHeldWhere + taskReturning

	// taskProgressSQL adds only while the items left can absorb the increment;
	// the caller has checked both increments are non-negative.
	taskProgressSQL = `UPDATE ? SET success_count = success_count + ?, failed_count = failed_count + ?, updated_at = ?` +
		taskHeldWhere + ` AND total_count - success_count - failed_count >= ?` + taskReturning

	// The same total again matches too (a resumed worker); a different one
	// only while nothing is decided.
	taskSetTotalSQL = `UPDATE ? SET total_count = ?, updated_at = ?` + taskHeldWhere +
		` AND (total_count = ? OR (success_count = 0 AND failed_count = 0))` + taskReturning

	taskCompleteSQL = `UPDATE ? SET status = 3, finished_at = ?, updated_at = ?, lease_owner = NULL, lease_expires_at = NULL,
	error_code = NULL, error_message = NULL` + taskHeldWhere + ` AND success_count + failed_count = total_count` + taskReturning

	taskFailSQL = `UPDATE ? SET status = 4, error_code = ?, error_message = ?, finished_at = ?, updated_at = ?,
	lease_owner = NULL, lease_expires_at = NULL` + taskHeldWhere + taskReturning

	taskCancelSQL = `UPDATE ? SET status = 5, error_code = ?, error_message = ?, finished_at = ?, updated_at = ?,
	lease_owner = NULL, lease_expires_at = NULL WHERE id = ? AND status IN (1, 2)` + taskReturning

	// taskRecoverSQL locks the victims in a materialized CTE so LIMIT
	// bounds the rows changed and concurrent sweeps skip each other's rows.
	taskRecoverSQL = `WITH expired AS MATERIALIZED (
		SELECT id, lease_expires_at FROM ? WHERE status = 2 AND lease_expires_at <= ?
		ORDER BY lease_expires_at LIMIT ? FOR UPDATE SKIP LOCKED
	)
	UPDATE ? AS t SET status = 1, updated_at = ?, lease_owner = NULL, lease_expires_at = NULL
	FROM expired WHERE t.id = expired.id
	RETURNING t.id::text, expired.lease_expires_at`
)

// Store is ports.TaskStore over one business task table that embeds
// Columns. Every write is one conditional UPDATE whose WHERE clause is
// the core rule's precondition (status, lease owner, fencing token, live
// expiry, counts); when it touches no row the store re-reads the task and
// returns the error the core/tasks rule gives for it, so callers get the
// precise reason (terminal, lease lost, counts) and nothing was written.
type Store struct {
	db    bun.IDB
	table bun.Ident
}

var _ ports.TaskStore = (*Store)(nil)

// NewStore returns a Store on table through db (a *bun.DB pool, or
// a bun.Tx so the task write commits with the business's own writes). The
// table name must match ^[a-z_][a-z0-9_]{0,49}$; it is always quoted.
func NewStore(db bun.IDB, table string) (*Store, error) {
	if db == nil {
		return nil, errors.New("pgtasks: NewStore needs a db; pass the *bun.DB from postgres.Open or a bun.Tx")
	}
	if err := checkTaskTable(table); err != nil {
		return nil, err
	}
	return &Store{db: db, table: bun.Ident(table)}, nil
}

// Table returns the name of the task table the store writes, so a test
// can compare that table with ColumnsSQL.
func (s *Store) Table() string { return string(s.table) }

// Create inserts a Pending task with only the contract columns set: the
// business's own columns need defaults, or the business inserts the row
// itself with NewColumns.
func (s *Store) Create(ctx context.Context, id string, total int64, now time.Time) (tasks.Task, error) {
	if _, err := tasks.NewTask(id, total, now); err != nil {
		return tasks.Task{}, fmt.Errorf("create task: %w", err)
	}
	var row taskRow
	if err := s.db.NewRaw(taskCreateSQL, s.table, id, total, now, now).Scan(ctx, &row); err != nil {
		return tasks.Task{}, fmt.Errorf("create task %q: %w", id, pgerr.Translate(err)) // duplicate id: ErrConflict
	}
	return row.Task(row.ID), nil
}

// Get implements ports.TaskStore.
func (s *Store) Get(ctx context.Context, id string) (tasks.Task, error) {
	var row taskRow
	if err := s.db.NewRaw(taskSelectSQL, s.table, id).Scan(ctx, &row); err != nil {
		return tasks.Task{}, fmt.Errorf("get task %q: %w", id, pgerr.Translate(err)) // no row: ports.ErrNotFound
	}
	return row.Task(row.ID), nil
}

// Claim implements ports.TaskStore.
func (s *Store) Claim(ctx context.Context, id, owner string, leaseFor time.Duration, now time.Time) (tasks.Task, error) {
	rule := func(t tasks.Task) (tasks.Task, error) { return t.Claim(owner, now, leaseFor) }
	if badLease(owner, leaseFor) {
		return tasks.Task{}, s.explain(ctx, id, rule) // the rule names the bad argument
	}
	return s.write(ctx, "claim", id, rule, taskClaimSQL, s.table, owner, now.Add(leaseFor), now, now, id, now)
}

// Renew implements ports.TaskStore.
func (s *Store) Renew(ctx context.Context, id, owner string, token int64, leaseFor time.Duration, now time.Time) error {
	rule := taskHolder(owner, token, now, func(t tasks.Task) (tasks.Task, error) { return t.Renew(owner, token, now, leaseFor) })
	if badLease(owner, leaseFor) {
		return s.explain(ctx, id, rule)
	}
	_, err := s.write(ctx, "renew", id, rule, taskRenewSQL, s.table, now.Add(leaseFor), now, id, owner, token, now)
	return err
}

// RecordProgress implements ports.TaskStore.
func (s *Store) RecordProgress(ctx context.Context, id, owner string, token int64, success, failed int64, now time.Time) (tasks.Task, error) {
	rule := taskHolder(owner, token, now, func(t tasks.Task) (tasks.Task, error) {
		return t.RecordProgress(owner, token, success, failed, now)
	})
	if success < 0 || failed < 0 || success > math.MaxInt64-failed {
		return tasks.Task{}, s.explain(ctx, id, rule)
	}
	return s.write(ctx, "record progress of", id, rule, taskProgressSQL,
		s.table, success, failed, now, id, owner, token, now, success+failed)
}

// SetTotal implements ports.TaskStore.
func (s *Store) SetTotal(ctx context.Context, id, owner string, token int64, total int64, now time.Time) (tasks.Task, error) {
	rule := taskHolder(owner, token, now, func(t tasks.Task) (tasks.Task, error) {
		return t.SetTotal(owner, token, total, now)
	})
	if total < 0 {
		return tasks.Task{}, s.explain(ctx, id, rule)
	}
	return s.write(ctx, "set the total of", id, rule, taskSetTotalSQL, s.table, total, now, id, owner, token, now, total)
}

// Complete implements ports.TaskStore.
func (s *Store) Complete(ctx context.Context, id, owner string, token int64, now time.Time) (tasks.Task, error) {
	rule := taskHolder(owner, token, now, func(t tasks.Task) (tasks.Task, error) { return t.Complete(owner, token, now) })
	return s.write(ctx, "complete", id, rule, taskCompleteSQL, s.table, now, now, id, owner, token, now)
}

// Fail implements ports.TaskStore.
func (s *Store) Fail(ctx context.Context, id, owner string, token int64, summary tasks.Summary, now time.Time) (tasks.Task, error) {
	rule := taskHolder(owner, token, now, func(t tasks.Task) (tasks.Task, error) { return t.Fail(owner, token, summary, now) })
	if summary.Validate() != nil {
		return tasks.Task{}, s.explain(ctx, id, rule)
	}
	return s.write(ctx, "fail", id, rule, taskFailSQL, s.table, summary.Code, summary.Message, now, now, id, owner, token, now)
}

// Cancel implements ports.TaskStore.
func (s *Store) Cancel(ctx context.Context, id string, now time.Time, cancellable bool) (tasks.Task, error) {
	rule := func(t tasks.Task) (tasks.Task, error) { return t.Cancel(cancellable, now) }
	if !cancellable {
		return tasks.Task{}, s.explain(ctx, id, rule)
	}
	sum := tasks.SummaryFor(tasks.CodeCancelled)
	return s.write(ctx, "cancel", id, rule, taskCancelSQL, s.table, sum.Code, sum.Message, now, now, id)
}

// RecoverExpired implements ports.TaskStore, longest expired first.
func (s *Store) RecoverExpired(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if limit < 1 {
		return nil, fmt.Errorf("recover expired tasks: limit %d; pass 1 or more", limit)
	}
	var rows []recoveredRow
	if err := s.db.NewRaw(taskRecoverSQL, s.table, now, limit, s.table, now).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("recover expired tasks in %s: %w", s.table, pgerr.Translate(err))
	}
	// RETURNING has no order: sort as the CTE chose them.
	slices.SortFunc(rows, func(a, b recoveredRow) int {
		return cmp.Or(a.ExpiredAt.Compare(b.ExpiredAt), cmp.Compare(a.ID, b.ID))
	})
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}

// recoveredRow is what taskRecoverSQL returns per task.
type recoveredRow struct {
	ID        string    `bun:"id"`
	ExpiredAt time.Time `bun:"lease_expires_at"`
}

// write runs one conditional UPDATE ... RETURNING. No row means the
// precondition did not hold: explain says which.
func (s *Store) write(ctx context.Context, op, id string, rule func(tasks.Task) (tasks.Task, error), query string, args ...any) (tasks.Task, error) {
	var row taskRow
	err := s.db.NewRaw(query, args...).Scan(ctx, &row)
	switch {
	case err == nil:
		return row.Task(row.ID), nil
	case errors.Is(err, sql.ErrNoRows):
		return tasks.Task{}, s.explain(ctx, id, rule)
	default:
		return tasks.Task{}, fmt.Errorf("%s task %q: %w", op, id, pgerr.Translate(err))
	}
}

// explain re-reads the task and returns the rule's error for it. If the
// rule now passes, the task changed between the UPDATE and the read.
func (s *Store) explain(ctx context.Context, id string, rule func(tasks.Task) (tasks.Task, error)) error {
	cur, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if _, err := rule(cur); err != nil {
		return err
	}
	return fmt.Errorf("task %q changed concurrently: %w; re-read it and retry", id, ports.ErrConflict)
}

// taskHolder wraps a lease-holder rule with the ports.TaskStore precedence: a
// non-terminal task the caller no longer holds a live lease on is
// lease.ErrLost, whatever else the rule said.
func taskHolder(owner string, token int64, now time.Time, rule func(tasks.Task) (tasks.Task, error)) func(tasks.Task) (tasks.Task, error) {
	return func(t tasks.Task) (tasks.Task, error) {
		next, err := rule(t)
		if err == nil || errors.Is(err, tasks.ErrTerminal) || errors.Is(err, lease.ErrLost) {
			return next, err
		}
		if t.Lease.Check(owner, token, now) != nil {
			return next, fmt.Errorf("%w: %w", lease.ErrLost, err)
		}
		return next, err
	}
}

// badLease reports an owner or lease length the core rule refuses with
// lease.ErrInvalid; explain then returns the rule's error, which names it.
func badLease(owner string, ttl time.Duration) bool {
	return owner == "" || ttl <= 0 || ttl > lease.MaxTTL
}
