package devices

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/postgres/pgtasks"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// EventAssignmentRequested is the outbox event type the upload appends;
// its payload is {"task_id": "..."} (version 1).
const EventAssignmentRequested = "devices.assignment.requested"

// requested is the payload of EventAssignmentRequested.
type requested struct {
	TaskID string `json:"task_id"`
}

// UploadCommand is one upload, already read (readUpload).
type UploadCommand struct {
	// Key is the request's idempotency key, scoped to the actor.
	Key ports.IdempotencyKey
	// FileName is the uploaded file's cleaned base name.
	FileName string
	// File is the CSV, at most MaxFileBytes; it is parsed by the worker.
	File []byte
	// RequestID is the entry command's id; the outbox event carries it.
	// Empty: Key.RequestID, the caller's key.
	RequestID string
}

// UploadResult is Upload's answer: the new task, or, for a retry of an
// earlier upload with the same key, that upload's stored answer.
type UploadResult struct {
	// Replay is the first upload's stored answer (status and body, to be
	// sent as they are); nil for a new task.
	Replay *ports.StoredResponse
	// TaskID is the new task and Body its Created JSON, the 202 body
	// stored for replays; zero with Replay.
	TaskID string
	Body   []byte
}

// Upload stores the file as a Pending task owned by the actor, with its
// outbox event and idempotency record, in one short transaction. The file
// is not parsed here, so the request stays short: the worker does that
// under the task's lease. The actor
// needs RoleAgent or RoleAdmin (else ErrForbidden, before anything is
// stored); the task records whether the uploader held RoleAdmin, which
// decides what its rows may do (see RoleAgent) when the worker runs it.
// Two quotas are checked after the replay decision (a retry of an accepted
// upload replays whatever they say now): a file with more non-blank lines
// after the header than KeyMaxRows is a *TooManyRowsError, and a new
// upload beyond KeyUploadsPerMinute of the actor's in the last minute is a
// *RateLimitedError. Either stores nothing.
func (s *Service) Upload(ctx context.Context, actor Actor, cmd UploadCommand) (UploadResult, error) {
	if err := actor.authorize(); err != nil {
		return UploadResult{}, err
	}
	maxRows, err := configured(ctx, s.config, KeyMaxRows, DefaultMaxRows)
	if err != nil {
		return UploadResult{}, err
	}
	perMinute, err := configured(ctx, s.config, KeyUploadsPerMinute, DefaultUploadsPerMinute)
	if err != nil {
		return UploadResult{}, err
	}
	now := s.clock.Now().UTC()
	cols, err := pgtasks.NewColumns(0, now) // total is set by the worker once it parsed the file
	if err != nil {
		return UploadResult{}, err
	}
	// The row is inserted with a one-byte placeholder and the file follows
	// as a bound parameter (storeFile): bun would inline it as hex text, a
	// query four times the file's size.
	rec := &taskRecord{
		ID: uuid.NewString(), OwnerSubject: actor.Subject, AssignAny: actor.HasRole(RoleAdmin),
		FileName: cmd.FileName, FileContent: []byte{0}, Columns: cols,
	}
	// Past the quota, refuse before the transaction: a refused upload
	// then holds a pooled connection for one statement and never queues
	// on the principal's lock. The transaction counts again under the lock.
	if err := precheckRate(ctx, s.db, actor.Subject, cmd.Key, perMinute, now); err != nil {
		return UploadResult{}, err
	}
	var res UploadResult
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// One upload of this principal at a time, so the count below is exact.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", TaskTable+"/"+actor.Subject); err != nil {
			return fmt.Errorf("lock uploads of principal: %w", err)
		}
		d, stored, err := pgidem.Insert(ctx, tx, rec, cmd.Key)
		if err != nil {
			return err
		}
		if d == idempotency.DecisionReplay {
			res.Replay = stored
			return nil
		}
		// The quotas come after the replay decision: lowering one must not
		// refuse the retry of an upload it accepted.
		if n := dataLines(cmd.File); n > maxRows {
			return &TooManyRowsError{Rows: n, Max: maxRows} // rolls the new task back
		}
		if err := checkRate(ctx, tx, actor.Subject, perMinute, now); err != nil {
			return err // rolls the new task back
		}
		if err := storeFile(ctx, tx, rec.ID, cmd.File); err != nil {
			return err
		}
		if err := appendRequested(ctx, tx, rec.ID, cmp.Or(cmd.RequestID, cmd.Key.RequestID), now); err != nil {
			return err
		}
		res.TaskID = rec.ID
		if res.Body, err = json.Marshal(Created{TaskID: rec.ID}); err != nil {
			return err
		}
		return pgidem.SaveResponse(ctx, tx, rec, ports.StoredResponse{
			ResultRef: rec.ID, Status: http.StatusAccepted, Body: res.Body,
		})
	})
	if err != nil {
		return UploadResult{}, err
	}
	return res, nil
}

// storeFile sets task id's file_content to file, sent as a bound binary
// parameter: the file is copied once into the connection's buffer and
// never appears in query text (or in a server log line quoting it). The
// pool's default is pgx's simple protocol, which would inline it into the
// text client-side; QueryExecModeExec binds it (an unnamed statement, so
// a pooler in transaction mode is fine).
func storeFile(ctx context.Context, tx bun.Tx, id string, file []byte) error {
	const q = `UPDATE ex_devices_task SET file_content = $1 WHERE id = $2`
	if _, err := tx.Tx.ExecContext(ctx, q, pgx.QueryExecModeExec, file, id); err != nil {
		return fmt.Errorf("store uploaded file: %w", err)
	}
	return nil
}

// uploadWindow is the span KeyUploadsPerMinute counts over.
const uploadWindow = time.Minute

// checkRate counts the principal's tasks created in the minute up to now,
// the new one included, in tx (Postgres, so every api replica sees the
// same count; the caller holds the principal's advisory lock). More than
// limit is a *RateLimitedError whose RetryAfter is when the oldest of them
// leaves the window, in whole seconds (at least 1).
func checkRate(ctx context.Context, tx bun.Tx, subject string, limit int64, now time.Time) error {
	var (
		n      int64
		oldest time.Time
	)
	err := tx.NewSelect().Table(TaskTable).ColumnExpr("count(*), coalesce(min(created_at), ?)", now).
		Where("owner_subject = ? AND created_at > ?", subject, now.Add(-uploadWindow)).
		Scan(ctx, &n, &oldest)
	if err != nil {
		return fmt.Errorf("count recent uploads of principal: %w", err)
	}
	if n <= limit {
		return nil
	}
	return rateLimited(limit, oldest, now)
}

// precheckRate is checkRate without the lock, on the pool, in one
// statement: the principal's uploads in the window, and whether key is
// already stored (a retry still replays, so it is let through). At the
// limit already, the new upload would be one more: *RateLimitedError.
func precheckRate(ctx context.Context, db bun.IDB, subject string, key ports.IdempotencyKey, limit int64, now time.Time) error {
	var (
		n      int64
		oldest time.Time
		stored bool
	)
	recent := "owner_subject = ? AND created_at > ?"
	err := db.NewSelect().Table(TaskTable).
		ColumnExpr("count(*) FILTER (WHERE "+recent+")", subject, now.Add(-uploadWindow)).
		ColumnExpr("coalesce(min(created_at) FILTER (WHERE "+recent+"), ?)", subject, now.Add(-uploadWindow), now).
		ColumnExpr("count(*) FILTER (WHERE idem_principal = ? AND idem_operation = ? AND idem_request_id = ?) > 0",
			key.Scope.Principal, key.Scope.Operation, key.RequestID).
		WhereOr(recent, subject, now.Add(-uploadWindow)).
		WhereOr("idem_principal = ? AND idem_operation = ? AND idem_request_id = ?", key.Scope.Principal, key.Scope.Operation, key.RequestID).
		Scan(ctx, &n, &oldest, &stored)
	if err != nil {
		return fmt.Errorf("count recent uploads of principal: %w", err)
	}
	if stored || n < limit {
		return nil
	}
	return rateLimited(limit, oldest, now)
}

// rateLimited is the refusal of an upload past limit whose oldest upload in
// the window was at oldest: RetryAfter is when it leaves the window, in
// whole seconds (at least 1).
func rateLimited(limit int64, oldest, now time.Time) error {
	wait := max(time.Second, oldest.Add(uploadWindow).Sub(now))
	wait = (wait + time.Second - 1).Truncate(time.Second)
	return &RateLimitedError{Max: limit, RetryAfter: wait}
}

// dataLines counts the file's non-blank lines after the first (the
// header): an upper bound of its CSV data rows (a quoted field spanning
// lines counts once per line), cheap enough for the request path.
func dataLines(data []byte) int64 {
	var n int64
	for line := range bytes.Lines(data) {
		if len(bytes.TrimRight(line, "\r\n")) > 0 {
			n++
		}
	}
	return max(0, n-1)
}

// appendRequested appends a new EventAssignmentRequested event for task
// id through db (the caller's transaction, or the pool for a single
// statement), with a new event_id.
func appendRequested(ctx context.Context, db bun.IDB, id, requestID string, now time.Time) error {
	ev, err := outbox.New(outbox.NewParams{
		EventID:        uuid.NewString(),
		EventType:      EventAssignmentRequested,
		PayloadVersion: 1,
		AggregateType:  "device_assignment_task",
		AggregateID:    id,
		ResourceType:   "device_assignment_task",
		ResourceID:     id,
		RequestID:      requestID,
		Payload:        requested{TaskID: id},
		Now:            now,
	})
	if err != nil {
		return fmt.Errorf("build %s event: %w", EventAssignmentRequested, err)
	}
	return pgoutbox.Append(ctx, db, ev)
}
