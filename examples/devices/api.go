package devices

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/adapters/http/ratehttp"
	"github.com/july/template/adapters/http/taskhttp"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redaction"
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

// API serves the device batch-assignment endpoints. Its handlers only map
// HTTP to a Service call and the result back to HTTP: no transaction, no
// query.
type API struct {
	svc        *Service
	idem, rate echo.MiddlewareFunc
}

// NewAPI returns the handlers over svc. guard may be nil (no early
// duplicate rejection; the unique constraint still decides). counter
// counts each principal's uploads for KeyUploadsPerMinute across replicas
// (Redis); nil or down, each replica counts its own and the count in
// Postgres (Upload) still holds across them.
func NewAPI(svc *Service, guard ports.Guard, counter ports.WindowCounter, log *slog.Logger) (*API, error) {
	if svc == nil {
		return nil, errors.New("devices: NewAPI needs a Service")
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
	rate, err := ratehttp.Middleware(ratehttp.Config{
		Name: OperationAssign, Counter: counter, Clock: svc.clock,
		LimitFunc: func(ctx context.Context) (int64, error) {
			return configured(ctx, svc.config, KeyUploadsPerMinute, DefaultUploadsPerMinute)
		},
		Refusal: func(limit int64) *httpx.Error { return rateRefusal(limit) },
	})
	if err != nil {
		return nil, err
	}
	return &API{svc: svc, idem: idem, rate: rate}, nil
}

// Register adds the routes to g, the authenticated /api/v1 group. Every
// route checks the caller's roles first (the use cases' own rule, so the
// same 403), before the body or a parameter is read; the upload then
// checks the principal's rate (no body read, no connection taken for a
// refused upload) and raises the body limit before the idempotency
// middleware reads the body.
func (a *API) Register(g *echo.Group) {
	g.POST(RouteCreate, a.create, allow, a.rate, httpx.BodyLimit(maxBodyBytes), a.idem)
	g.GET(RouteTask, a.get, allow)
	g.GET(RouteFailures, a.failures, allow)
	g.POST(RouteCancel, a.cancel, allow)
}

// allow answers ErrForbidden (403) unless the caller holds a role of this
// domain; the use cases check again, so this only moves the refusal ahead
// of the body.
func allow(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		who, err := actor(c)
		if err != nil {
			return err
		}
		if err := who.authorize(); err != nil {
			return err
		}
		return next(c)
	}
}

// AccessRoutes are the access-log policies of the routes: the upload is a
// file transfer, so its multipart body is logged as a summary of part
// names and sizes, never its bytes, and its JSON (the 202's task id) keeps
// only the declared fields.
func AccessRoutes() []accesslog.Route {
	return []accesslog.Route{{
		Path: APIPrefix + RouteCreate,
		RoutePolicy: accesslog.RoutePolicy{
			Policy: redaction.PolicyFileTransfer, Safe: []string{"task_id"},
		},
	}}
}

// create is POST /api/v1/device-assignments: the idempotency middleware
// has validated the key and fingerprinted the body; Service.Upload stores
// the task.
func (a *API) create(c echo.Context) error {
	ctx := c.Request().Context()
	key, ok := idemhttp.KeyFrom(ctx)
	if !ok {
		return httpx.Internal(errors.New("devices: upload route lacks the idempotency middleware"))
	}
	who, err := actor(c)
	if err != nil {
		return err
	}
	name, data, err := readUpload(c)
	if err != nil {
		return err
	}
	res, err := a.svc.Upload(ctx, who, UploadCommand{
		Key: key, FileName: name, File: data, RequestID: httpx.RequestID(ctx),
	})
	switch {
	case err != nil:
		return err
	case res.Replay != nil:
		return idemhttp.Replay(c, *res.Replay)
	}
	return c.JSONBlob(http.StatusAccepted, res.Body)
}

// readUpload returns the uploaded file's cleaned name and bytes. It
// parses the multipart body the idempotency middleware already holds
// (httpx.ReadBody) and copies the file part once into a buffer no larger
// than the body: no multipart form, no temporary file, no growing copies,
// so an upload holds about twice its size until the task is stored.
func readUpload(c echo.Context) (string, []byte, error) {
	body, err := httpx.ReadBody(c)
	if err != nil {
		return "", nil, err // 413 BODY_TOO_LARGE, or the body budget's answer
	}
	mediaType, params, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if err != nil || mediaType != echo.MIMEMultipartForm || params["boundary"] == "" {
		return "", nil, errFileMissing.WithCause(fmt.Errorf("devices: upload is not multipart/form-data: %w", http.ErrNotMultipart))
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		switch {
		case errors.Is(err, io.EOF):
			return "", nil, errFileMissing.WithCause(http.ErrMissingFile)
		case err != nil:
			return "", nil, errFileMissing.WithCause(err)
		case p.FormName() != FormField || p.FileName() == "":
			continue
		}
		data, err := readPart(p, min(len(body), MaxFileBytes+1))
		switch {
		case err != nil:
			return "", nil, errFileMissing.WithCause(err)
		case len(data) > MaxFileBytes:
			return "", nil, errFileTooLarge
		case len(data) == 0:
			return "", nil, errFileMissing.WithCause(errors.New("devices: uploaded file is empty"))
		}
		name, err := cleanFileName(p.FileName())
		return name, data, err
	}
}

// readPart reads at most max bytes of p into one buffer of that size.
func readPart(p io.Reader, max int) ([]byte, error) {
	buf := make([]byte, max)
	n, err := io.ReadFull(p, buf)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	return buf[:n:n], err
}

// cleanFileName keeps the base name as valid UTF-8 of at most maxFileName
// runes. A name with a control or format character (NUL, which Postgres
// text cannot hold; CR, LF and ESC, which forge log lines and terminal
// output; DEL, C1, bidi overrides that disguise an extension) is refused
// with 400 DEVICE_FILE_NAME_INVALID before anything is stored: the
// multipart reader decodes RFC 2231 names (filename*=UTF-8”a%00b), so
// these arrive as they are.
func cleanFileName(name string) (string, error) {
	if i := strings.IndexFunc(name, unsafeRune); i >= 0 {
		return "", errFileNameInvalid.WithCause(fmt.Errorf("devices: file name has control character %U at byte %d", []rune(name[i:])[0], i))
	}
	name = strings.ToValidUTF8(path.Base(strings.ReplaceAll(name, `\`, "/")), "")
	if name == "." || name == "/" {
		return "", nil
	}
	if utf8.RuneCountInString(name) > maxFileName {
		name = string([]rune(name)[:maxFileName])
	}
	return name, nil
}

// unsafeRune reports a control (Cc: C0, DEL, C1) or format (Cf: bidi
// overrides, zero-width characters) rune.
func unsafeRune(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

// actor is the authenticated caller as the use cases take it. The group's
// auth middleware runs first, so the 401 is a safety net.
func actor(c echo.Context) (Actor, error) {
	p, ok := auth.PrincipalFrom(c.Request().Context())
	if !ok || p.Subject == "" {
		return Actor{}, echo.ErrUnauthorized
	}
	return Actor{Subject: p.Subject, Roles: p.Roles}, nil
}

// taskParams reads the caller and the path's task_id (400 naming task_id,
// before any lookup).
func taskParams(c echo.Context) (Actor, string, error) {
	who, err := actor(c)
	if err != nil {
		return Actor{}, "", err
	}
	id, err := httpx.PathUUID(c, "task_id")
	return who, id, err
}

// get renders the task DTO with the poll hint.
func (a *API) get(c echo.Context) error {
	who, id, err := taskParams(c)
	if err != nil {
		return err
	}
	polls, err := taskhttp.PollsSoFar(c) // 400 POLL_INVALID; no lookup
	if err != nil {
		return err
	}
	t, err := a.svc.Task(c.Request().Context(), who, id)
	if err != nil {
		return err
	}
	return taskhttp.Render(c, t, polls)
}

// failures pages the task's failure details in file order.
func (a *API) failures(c echo.Context) error {
	who, id, err := taskParams(c)
	if err != nil {
		return err
	}
	page, err := taskhttp.ParsePage(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := a.svc.Task(ctx, who, id)
	if err != nil {
		return err
	}
	items, total, err := a.svc.Failures(ctx, who, id, page.Offset(), page.Limit())
	if err != nil {
		return err
	}
	// Failures beyond KeyMaxStoredFailures are counted, not stored. Read
	// before the page, the count is exact once the task finished and never
	// overstated while it runs.
	notStored := max(0, t.Counts.Failed-total)
	if items == nil {
		items = []FailureItem{}
	}
	return c.JSON(http.StatusOK, FailurePage{
		Page:           taskhttp.Page[FailureItem]{Items: items, Page: page.Page, PageSize: page.PageSize, Total: total},
		NotStoredCount: notStored,
	})
}

// FailurePage is the failures listing: a page of the stored failure
// details (Total counts them) and NotStoredCount, the failed rows beyond
// KeyMaxStoredFailures that were counted (failed_count) but not stored.
type FailurePage struct {
	taskhttp.Page[FailureItem]
	NotStoredCount int64 `json:"not_stored_count"`
}

// cancel is POST .../cancel: 200 with the task's view, also for a task
// already cancelled; 409 TASK_NOT_CANCELLABLE once otherwise finished.
func (a *API) cancel(c echo.Context) error {
	who, id, err := taskParams(c)
	if err != nil {
		return err
	}
	t, err := a.svc.Cancel(c.Request().Context(), who, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t.View())
}
