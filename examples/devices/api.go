package devices

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/adapters/http/taskhttp"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/postgres/pgtasks"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
	"github.com/july/template/core/tasks"
)

// Routes, relative to the authenticated /api/v1 group.
const (
	RouteCreate   = "/device-assignments"
	RouteTask     = "/device-assignments/:task_id"
	RouteFailures = "/device-assignments/:task_id/failures"
	RouteCancel   = "/device-assignments/:task_id/cancel"
)

// APIPrefix is where the app mounts the authenticated group; the
// access-log policy is keyed by the full route pattern.
const APIPrefix = "/api/v1"

// Upload limits.
const (
	// FormField is the multipart field carrying the CSV.
	FormField = "file"
	// MaxFileBytes bounds the CSV (2 MiB, also a CHECK on the table).
	MaxFileBytes = 2 << 20
	// maxBodyBytes is the route's body limit: the file plus room for the
	// multipart framing.
	maxBodyBytes = MaxFileBytes + 64<<10
	// maxFileName bounds the stored original file name, in runes.
	maxFileName = 255
)

// OperationAssign is the idempotency operation of the upload.
const OperationAssign = "devices.assign"

// EventAssignmentRequested is the outbox event type the upload appends;
// its payload is {"task_id": "..."} (version 1).
const EventAssignmentRequested = "devices.assignment.requested"

// requested is the payload of EventAssignmentRequested.
type requested struct {
	TaskID string `json:"task_id"`
}

// Created is the 202 body of an accepted upload.
type Created struct {
	TaskID string `json:"task_id"`
}

// FailureItem is one row of the failures listing.
type FailureItem struct {
	RowNo    int    `json:"row_no"`
	DeviceSN string `json:"device_sn"`
	Code     string `json:"code"`
	Message  string `json:"message"`
}

// API serves the device batch-assignment endpoints.
type API struct {
	db    *bun.DB
	store *pgtasks.Store
	clock ports.Clock
	idem  echo.MiddlewareFunc
}

// NewAPI returns the handlers. guard may be nil (no early duplicate
// rejection; the unique constraint still decides).
func NewAPI(db *bun.DB, clock ports.Clock, guard ports.Guard, log *slog.Logger) (*API, error) {
	if db == nil || clock == nil {
		return nil, errors.New("devices: NewAPI needs a db and a clock")
	}
	store, err := pgtasks.NewStore(db, TaskTable)
	if err != nil {
		return nil, err
	}
	fp, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	if err != nil {
		return nil, err
	}
	// A multipart body is fingerprinted over its parsed parts (see
	// idemhttp): a retry with the same file and a new boundary replays.
	idem, err := idemhttp.Middleware(idemhttp.Config{
		Operation: OperationAssign, Fingerprinter: fp, Guard: guard, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	return &API{db: db, store: store, clock: clock, idem: idem}, nil
}

// Register adds the routes to g, the authenticated /api/v1 group. The
// upload raises the body limit before the idempotency middleware reads
// the body.
func (a *API) Register(g *echo.Group) {
	g.POST(RouteCreate, a.create, httpx.BodyLimit(maxBodyBytes), a.idem)
	g.GET(RouteTask, a.get)
	g.GET(RouteFailures, a.failures)
	g.POST(RouteCancel, a.cancel)
}

// AccessRoutes are the access-log policies of the routes: the upload is a
// file transfer, so its multipart body is logged as a summary of part
// names and sizes, never its bytes.
func AccessRoutes() []accesslog.Route {
	return []accesslog.Route{{
		Path: APIPrefix + RouteCreate, RoutePolicy: accesslog.RoutePolicy{Policy: redaction.PolicyFileTransfer},
	}}
}

// create stores the upload as a Pending task with its outbox event and
// idempotency record in one short transaction. The file is not parsed
// here (PRD section 3): the worker does that.
func (a *API) create(c echo.Context) error {
	ctx := c.Request().Context()
	key, ok := idemhttp.KeyFrom(ctx)
	if !ok {
		return httpx.Internal(errors.New("devices: upload route lacks the idempotency middleware"))
	}
	p, _ := auth.PrincipalFrom(ctx)
	name, data, err := readUpload(c)
	if err != nil {
		return err
	}
	now := a.clock.Now().UTC()
	cols, err := pgtasks.NewColumns(0, now) // total is set by the worker once it parsed the file
	if err != nil {
		return err
	}
	rec := &taskRecord{ID: uuid.NewString(), OwnerSubject: p.Subject, FileName: name, FileContent: data, Columns: cols}
	var (
		replay *ports.StoredResponse
		body   []byte
	)
	err = a.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		d, stored, err := pgidem.Insert(ctx, tx, rec, key)
		if err != nil {
			return err
		}
		if d == idempotency.DecisionReplay {
			replay = stored
			return nil
		}
		if err := appendRequested(ctx, tx, rec.ID, cmp.Or(httpx.RequestID(ctx), key.RequestID), now); err != nil {
			return err
		}
		if body, err = json.Marshal(Created{TaskID: rec.ID}); err != nil {
			return err
		}
		return pgidem.SaveResponse(ctx, tx, rec, ports.StoredResponse{
			ResultRef: rec.ID, Status: http.StatusAccepted, Body: body,
		})
	})
	switch {
	case err != nil:
		return err
	case replay != nil:
		return idemhttp.Replay(c, *replay)
	}
	return c.JSONBlob(http.StatusAccepted, body)
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

// readUpload returns the uploaded file's cleaned name and bytes.
func readUpload(c echo.Context) (string, []byte, error) {
	fh, err := c.FormFile(FormField)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return "", nil, err // 413 BODY_TOO_LARGE
	case err != nil:
		return "", nil, errFileMissing.WithCause(err)
	case fh.Size > MaxFileBytes:
		return "", nil, errFileTooLarge
	case fh.Size == 0:
		return "", nil, errFileMissing.WithCause(errors.New("devices: uploaded file is empty"))
	}
	f, err := fh.Open()
	if err != nil {
		return "", nil, fmt.Errorf("open uploaded file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return "", nil, fmt.Errorf("read uploaded file: %w", err)
	}
	if len(data) > MaxFileBytes {
		return "", nil, errFileTooLarge
	}
	return cleanFileName(fh.Filename), data, nil
}

// cleanFileName keeps the base name as valid UTF-8 of at most maxFileName
// runes.
func cleanFileName(name string) string {
	name = strings.ToValidUTF8(path.Base(strings.ReplaceAll(name, `\`, "/")), "")
	if name == "." || name == "/" {
		return ""
	}
	if utf8.RuneCountInString(name) > maxFileName {
		name = string([]rune(name)[:maxFileName])
	}
	return name
}

// load returns the caller's task. A missing task and another caller's
// task are both ErrTaskNotFound.
func (a *API) load(c echo.Context) (taskHead, error) {
	ctx := c.Request().Context()
	id, err := httpx.PathUUID(c, "task_id") // 400 naming task_id; no lookup
	if err != nil {
		return taskHead{}, err
	}
	p, _ := auth.PrincipalFrom(ctx)
	var h taskHead
	err = a.db.NewSelect().Model(&h).Where("id = ? AND owner_subject = ?", id, p.Subject).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return taskHead{}, ErrTaskNotFound
	}
	if err != nil {
		return taskHead{}, fmt.Errorf("load device assignment task: %w", err)
	}
	return h, nil
}

// get renders the task DTO with the poll hint.
func (a *API) get(c echo.Context) error {
	polls, err := taskhttp.PollsSoFar(c) // 400 POLL_INVALID; no lookup
	if err != nil {
		return err
	}
	h, err := a.load(c)
	if err != nil {
		return err
	}
	return taskhttp.Render(c, h.Task(h.ID), polls)
}

// failures pages the task's failure details in file order.
func (a *API) failures(c echo.Context) error {
	h, err := a.load(c)
	if err != nil {
		return err
	}
	page, err := taskhttp.ParsePage(c)
	if err != nil {
		return err
	}
	var recs []failureRecord
	total, err := a.db.NewSelect().Model(&recs).Where("task_id = ?", h.ID).
		OrderExpr("row_no").Limit(int64(page.Limit())).Offset(int64(page.Offset())).
		ScanAndCount(c.Request().Context())
	if err != nil {
		return fmt.Errorf("list device assignment failures: %w", err)
	}
	items := make([]FailureItem, len(recs))
	for i, r := range recs {
		items[i] = FailureItem{RowNo: r.RowNo, DeviceSN: r.DeviceSN, Code: r.Code, Message: r.Message}
	}
	return taskhttp.RenderPage(c, page, items, int64(total))
}

// cancel cancels a Pending or Processing task; the worker stops at its
// next chunk, keeping the rows it already applied. Cancelling a cancelled
// task answers 200 with its current view (idempotent); another finished
// task is 409 TASK_NOT_CANCELLABLE.
func (a *API) cancel(c echo.Context) error {
	h, err := a.load(c)
	if err != nil {
		return err
	}
	if cur := h.Task(h.ID); cur.Status == tasks.Cancelled {
		// A retried cancel (its first answer lost) succeeds with the
		// current view and changes nothing.
		return c.JSON(http.StatusOK, cur.View())
	}
	t, err := a.store.Cancel(c.Request().Context(), h.ID, a.clock.Now(), true)
	if errors.Is(err, tasks.ErrTerminal) {
		if cur, lerr := a.load(c); lerr == nil && cur.Task(cur.ID).Status == tasks.Cancelled {
			return c.JSON(http.StatusOK, cur.Task(cur.ID).View()) // cancelled concurrently
		}
		return fmt.Errorf("%w: %w", ErrNotCancellable, err)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t.View())
}
