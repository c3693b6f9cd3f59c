package devices

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres/pgtasks"
	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
)

// Worker defaults.
const (
	DefaultLeaseFor  = 30 * time.Second
	DefaultChunkSize = 50
)

// WorkerConfig tunes a Worker. The zero value is usable.
type WorkerConfig struct {
	// Owner prefixes the lease owner of every run. Default:
	// devices-<host>-<pid>; each run appends a random suffix, so two
	// deliveries of one task never share a lease.
	Owner string
	// LeaseFor is the task lease; every chunk renews it. Default
	// DefaultLeaseFor.
	LeaseFor time.Duration
	// ChunkSize is how many rows one transaction decides. Default
	// DefaultChunkSize.
	ChunkSize int
	// MaxStoredFailures bounds the failure details stored per task: the
	// first ones in file order are stored, the rest only counted in
	// failed_count. Default (0): KeyMaxStoredFailures read from Config at
	// the start of each run, DefaultMaxStoredFailures without Config.
	MaxStoredFailures int
	// Config supplies KeyMaxStoredFailures; nil uses the default.
	Config ConfigReader
}

// Worker runs device assignment tasks: it claims a task with a lease,
// parses the stored CSV, and decides the rows in file order, a chunk per
// transaction. Each chunk's transaction renews the lease first (holding
// the task row's lock, so nobody can take over until it commits), writes
// the chunk's assignments and failures, and records the chunk's counts:
// the counts and the facts commit together or not at all, and a run that
// lost its lease writes nothing. A resumed run (lease takeover after a
// crash, or a re-delivery) therefore continues at row success+failed, and
// every row is decided exactly once.
type Worker struct {
	db    *bun.DB
	store *pgtasks.Store
	clock ports.Clock
	cfg   WorkerConfig

	// afterChunk, when set (tests), runs after each committed chunk with
	// the rows decided so far; an error ends the run there, as a crash.
	afterChunk func(done int64) error
}

// NewWorker returns a Worker over the task tables in db.
func NewWorker(db *bun.DB, clock ports.Clock, cfg WorkerConfig) (*Worker, error) {
	if db == nil || clock == nil {
		return nil, errors.New("devices: NewWorker needs a db and a clock")
	}
	store, err := pgtasks.NewStore(db, TaskTable)
	if err != nil {
		return nil, err
	}
	if cfg.Owner == "" {
		host, _ := os.Hostname()
		cfg.Owner = "devices-" + cmp.Or(host, "host") + "-" + strconv.Itoa(os.Getpid())
	}
	cfg.LeaseFor = cmp.Or(cfg.LeaseFor, DefaultLeaseFor)
	cfg.ChunkSize = cmp.Or(cfg.ChunkSize, DefaultChunkSize)
	if cfg.MaxStoredFailures < 0 {
		return nil, fmt.Errorf("devices: WorkerConfig MaxStoredFailures %d must not be negative", cfg.MaxStoredFailures)
	}
	if cfg.LeaseFor < 0 || cfg.LeaseFor > lease.MaxTTL || cfg.ChunkSize < 1 {
		return nil, fmt.Errorf("devices: WorkerConfig LeaseFor %s must be in (0, %s] and ChunkSize %d at least 1",
			cfg.LeaseFor, lease.MaxTTL, cfg.ChunkSize)
	}
	return &Worker{db: db, store: store, clock: clock, cfg: cfg}, nil
}

// Consumer is the queue consumer of EventAssignmentRequested.
func (w *Worker) Consumer() queue.Consumer {
	return queue.Consumer{
		EventType: EventAssignmentRequested,
		Handler: queue.Handle(func(ctx context.Context, _ outbox.Envelope, p requested) error {
			if p.TaskID == "" {
				return outbox.Permanent("DEVICE_EVENT_INVALID", "event payload has no task_id")
			}
			return w.Process(ctx, p.TaskID)
		}),
	}
}

// Process runs task id to its end. It returns nil when the task is
// finished (by this run or before: a duplicate delivery changes nothing),
// a permanent error when the task does not exist, and a retryable error
// when another live run holds it or this run lost its lease, so the
// delivery is retried and either takes the task over or finds it done.
func (w *Worker) Process(ctx context.Context, id string) error {
	owner := w.cfg.Owner + "/" + rand.Text()[:10]
	t, err := w.store.Claim(ctx, id, owner, w.cfg.LeaseFor, w.clock.Now())
	switch {
	case errors.Is(err, tasks.ErrTerminal):
		queue.LoggerFrom(ctx).InfoContext(ctx, "device assignment task already finished; nothing to do", slog.String("task_id", id))
		return nil
	case errors.Is(err, ports.ErrNotFound):
		return outbox.Permanent(CodeTaskNotFound, "device assignment task does not exist")
	case err != nil:
		return fmt.Errorf("claim device assignment task %s: %w", id, err)
	}
	r := &run{w: w, id: id, owner: owner, token: t.Lease.Token, task: t}
	return r.stopped(ctx, r.execute(ctx))
}

// run is one claimed execution of a task.
type run struct {
	w     *Worker
	id    string
	owner string // the lease owner
	token int64
	task  tasks.Task
	// uploader is the task's owner_subject and assignAny its assign_any:
	// who uploaded it and whether they held RoleAdmin (see applyChunk).
	uploader  string
	assignAny bool
	// maxStored bounds the stored failure details (WorkerConfig.MaxStoredFailures).
	maxStored int64
}

func (r *run) execute(ctx context.Context) error {
	var data []byte
	err := r.w.db.NewSelect().Table(TaskTable).Column("file_content", "owner_subject", "assign_any").
		Where("id = ?", r.id).Scan(ctx, &data, &r.uploader, &r.assignAny)
	if err != nil {
		return fmt.Errorf("load device assignment file of %s: %w", r.id, err)
	}
	rows, err := parseRows(data)
	switch {
	case errors.Is(err, errUnparsable):
		return r.fail(ctx, tasks.SummaryFor(tasks.CodeFileUnparsable))
	case errors.Is(err, errNoRows):
		return r.fail(ctx, tasks.Summary{Code: CodeFileNoRows, Message: "文件中没有设备数据行：请按模板填写 device_sn,target_agent_id 后重新上传。"})
	case err != nil:
		return err
	}
	if r.maxStored = int64(r.w.cfg.MaxStoredFailures); r.maxStored == 0 {
		if r.maxStored, err = configured(ctx, r.w.cfg.Config, KeyMaxStoredFailures, DefaultMaxStoredFailures); err != nil {
			return err
		}
	}
	total := int64(len(rows))
	if err := r.setTotal(ctx, total); err != nil {
		return err
	}
	for done := r.task.Counts.Done(); done < total; {
		end := min(done+int64(r.w.cfg.ChunkSize), total)
		if err := r.applyChunk(ctx, rows[done:end]); err != nil {
			return err
		}
		done = end
		if r.w.afterChunk != nil {
			if err := r.w.afterChunk(done); err != nil {
				return err
			}
		}
	}
	t, err := r.w.store.Complete(ctx, r.id, r.owner, r.token, r.w.clock.Now())
	if err != nil {
		return err
	}
	queue.LoggerFrom(ctx).InfoContext(ctx, "device assignment task completed", slog.String("task_id", r.id),
		slog.Int64("total_count", t.Counts.Total), slog.Int64("success_count", t.Counts.Success),
		slog.Int64("failed_count", t.Counts.Failed))
	return nil
}

// stopped turns a run's end into the handler's answer: a task finished by
// someone else (cancelled) is acknowledged; anything else is retried.
func (r *run) stopped(ctx context.Context, err error) error {
	if errors.Is(err, tasks.ErrTerminal) {
		queue.LoggerFrom(ctx).InfoContext(ctx, "device assignment task was finished elsewhere (cancelled); stopping", slog.String("task_id", r.id))
		return nil
	}
	if err != nil {
		return fmt.Errorf("run device assignment task %s: %w", r.id, err)
	}
	return nil
}

// fail finishes the task as Failed with a safe summary.
func (r *run) fail(ctx context.Context, s tasks.Summary) error {
	if _, err := r.w.store.Fail(ctx, r.id, r.owner, r.token, s, r.w.clock.Now()); err != nil {
		return err
	}
	queue.LoggerFrom(ctx).InfoContext(ctx, "device assignment task failed", slog.String("task_id", r.id), slog.String("error_code", s.Code))
	return nil
}

// setTotal records the number of data rows once, before any row is
// decided, for the holder of the lease. The file never changes, so a
// resumed run sets the same total again, which the store accepts.
func (r *run) setTotal(ctx context.Context, total int64) error {
	t, err := r.w.store.SetTotal(ctx, r.id, r.owner, r.token, total, r.w.clock.Now())
	if errors.As(err, new(*tasks.CountsError)) {
		return r.fail(ctx, tasks.SummaryFor(tasks.CodeExecutionFailed)) // cannot happen for an immutable file
	}
	if err != nil {
		return fmt.Errorf("set total of device assignment task %s: %w", r.id, err)
	}
	r.task.Counts = t.Counts
	return nil
}

// applyChunk decides rows in one transaction with the lease renewal and
// the progress record (see Worker).
func (r *run) applyChunk(ctx context.Context, rows []row) error {
	return r.w.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ts, err := pgtasks.NewStore(tx, TaskTable)
		if err != nil {
			return err
		}
		now := r.w.clock.Now()
		// First: lock the task row and prove the lease is still ours.
		if err := ts.Renew(ctx, r.id, r.owner, r.token, r.w.cfg.LeaseFor, now); err != nil {
			return err
		}
		var (
			assigned []assignmentRecord
			failed   []failureRecord
			nFailed  int64
		)
		// Rows are decided in file order (ownership refusals after the
		// chunk's upsert) and a chunk commits with its counts, so the
		// failures before this chunk are Counts.Failed: the first maxStored
		// failures are stored, on a resumed run too, and the rest only
		// counted.
		storedBefore := r.task.Counts.Failed
		fail := func(rw row, code string) {
			nFailed++
			if storedBefore+nFailed > r.maxStored {
				return
			}
			failed = append(failed, failureRecord{
				TaskID: r.id, RowNo: rw.No, DeviceSN: storedSN(rw.DeviceSN),
				Code: code, Message: rowMessages[code], CreatedAt: now,
			})
		}
		for _, rw := range rows {
			switch {
			case rw.Code != "":
				fail(rw, rw.Code)
			case !r.assignAny && rw.TargetID != r.uploader:
				fail(rw, CodeTargetForbidden)
			default:
				assigned = append(assigned, assignmentRecord{
					DeviceSN: rw.DeviceSN, AgentID: rw.TargetID, TaskID: r.id, RowNo: rw.No, UpdatedAt: now,
				})
			}
		}
		applied, err := r.assign(ctx, tx, assigned)
		if err != nil {
			return err
		}
		for _, a := range assigned {
			if !applied[a.DeviceSN] {
				fail(row{No: a.RowNo, DeviceSN: a.DeviceSN}, CodeOwnedByOther)
			}
		}
		if len(failed) > 0 {
			if _, err := tx.NewInsert().Model(&failed).On("CONFLICT (task_id, row_no) DO NOTHING").Exec(ctx); err != nil {
				return fmt.Errorf("record device assignment failures: %w", err)
			}
		}
		t, err := ts.RecordProgress(ctx, r.id, r.owner, r.token, int64(len(applied)), nFailed, now)
		if err != nil {
			return err
		}
		r.task.Counts = t.Counts // a failed commit ends the run, so the next chunk sees committed counts
		return nil
	})
}

// assign upserts rows (valid rows whose target the uploader may name) and
// returns the serials it applied. An admin's upload (assignAny) applies
// every row, reassigning devices other agents hold. An agent's upload
// applies a row only to an unassigned device or one the agent already
// holds: the ownership check is the upsert's own WHERE, so it is decided
// under the row lock, and a concurrent upload cannot slip between a read
// and the write. Applying a row twice (a resumed chunk) changes nothing.
func (r *run) assign(ctx context.Context, tx bun.Tx, rows []assignmentRecord) (map[string]bool, error) {
	applied := make(map[string]bool, len(rows))
	if len(rows) == 0 {
		return applied, nil
	}
	q := tx.NewInsert().Model(&rows).
		On("CONFLICT (device_sn) DO UPDATE").
		Set("agent_id = EXCLUDED.agent_id, task_id = EXCLUDED.task_id, row_no = EXCLUDED.row_no, updated_at = EXCLUDED.updated_at")
	if !r.assignAny {
		// Only the target agent's own device; targets are the uploader.
		q = q.Where("?TableAlias.agent_id = EXCLUDED.agent_id")
	}
	var sns []string
	if _, err := q.Returning("device_sn").Exec(ctx, &sns); err != nil {
		return nil, fmt.Errorf("apply device assignments: %w", err)
	}
	for _, sn := range sns {
		applied[sn] = true
	}
	return applied, nil
}
