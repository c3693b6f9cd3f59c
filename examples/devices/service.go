package devices

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgtasks"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
)

// Actor is who runs a use case: the authenticated caller, as the inbound
// adapter (HTTP, a CLI) knows it. Every use case takes one, so
// authorization (roles, ownership) is decided here, in one place, and not
// in each adapter. A task belongs to the Subject that uploaded it.
type Actor struct {
	// Subject is the caller's stable id (the token's "sub"); required.
	Subject string
	// Roles are the caller's role names.
	Roles []string
}

// Roles this domain reads from Actor.Roles (the token's "roles" claim).
// A caller holding neither gets 403 FORBIDDEN from every use case,
// decided before any lookup. The names carry the domain ("devices."): a
// role of another domain (the top-up admin) grants nothing here.
const (
	// RoleAgent may upload assignments of devices to itself: a row may
	// name only the uploader as target_agent_id, and only a device that is
	// unassigned or already the uploader's; other rows become failure rows
	// (CodeTargetForbidden, CodeOwnedByOther). An agent reads and cancels
	// its own tasks; another caller's task is ErrTaskNotFound.
	RoleAgent = "devices.agent"
	// RoleAdmin may assign any device to any agent, reassigning devices
	// other agents hold, and reads and cancels every task.
	RoleAdmin = "devices.admin"
)

// ErrForbidden is returned when the actor holds none of the roles a use
// case needs (403 FORBIDDEN). It is decided from the roles alone, before
// any lookup, so it says nothing about whether a task exists.
var ErrForbidden = errors.New("devices: actor holds neither the agent nor the admin role")

// HasRole reports whether the actor holds role.
func (a Actor) HasRole(role string) bool { return slices.Contains(a.Roles, role) }

// authorize is every use case's first step: the actor must be known and
// hold RoleAgent or RoleAdmin.
func (a Actor) authorize() error {
	switch {
	case a.Subject == "":
		return errNoActor
	case a.HasRole(RoleAdmin), a.HasRole(RoleAgent):
		return nil
	}
	return ErrForbidden
}

// errNoActor is a wiring bug: an adapter called a use case without the
// authenticated caller.
var errNoActor = errors.New("devices: use case called without an actor")

// Service is the domain's application layer: one method per use case
// (Upload, Task, Failures, Cancel), each owning its transaction or
// statement. Inbound adapters (the HTTP handlers in api.go, a CLI, a
// test) only translate to and from these calls; none of them opens a
// transaction or runs a query. The worker (worker.go) is the consumer
// side of the same domain.
type Service struct {
	db    *bun.DB
	store *pgtasks.Store
	clock ports.Clock
	// config supplies the upload quotas (limits.go); nil: the defaults.
	config ConfigReader
}

// NewService returns the use cases over db, stamping tasks with clock.
func NewService(db *bun.DB, clock ports.Clock) (*Service, error) {
	if db == nil || clock == nil {
		return nil, errors.New("devices: NewService needs a db and a clock")
	}
	store, err := pgtasks.NewStore(db, TaskTable)
	if err != nil {
		return nil, err
	}
	return &Service{db: db, store: store, clock: clock}, nil
}

// Task returns task id: any task for RoleAdmin, the actor's own for
// RoleAgent. A missing task and, for an agent, another caller's task are
// both ErrTaskNotFound (a task id names a task in the caller's own list;
// see load), so ids cannot be probed. Without either role: ErrForbidden.
func (s *Service) Task(ctx context.Context, actor Actor, id string) (tasks.Task, error) {
	h, err := s.load(ctx, actor, id)
	if err != nil {
		return tasks.Task{}, err
	}
	return h.Task(h.ID), nil
}

// Failures returns one page (limit items after offset) of the actor's
// task's failure details in file order, and how many there are in all.
func (s *Service) Failures(ctx context.Context, actor Actor, id string, offset, limit int) ([]FailureItem, int64, error) {
	h, err := s.load(ctx, actor, id)
	if err != nil {
		return nil, 0, err
	}
	var recs []failureRecord
	total, err := s.db.NewSelect().Model(&recs).Where("task_id = ?", h.ID).
		OrderExpr("row_no").Limit(int64(limit)).Offset(int64(offset)).
		ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list device assignment failures: %w", err)
	}
	items := make([]FailureItem, len(recs))
	for i, r := range recs {
		items[i] = FailureItem{RowNo: r.RowNo, DeviceSN: r.DeviceSN, Code: r.Code, Message: r.Message}
	}
	return items, int64(total), nil
}

// Cancel cancels the actor's Pending or Processing task; the worker stops
// at its next chunk, keeping the rows it already applied. Cancelling a
// cancelled task returns it unchanged (a retried cancel whose first answer
// was lost succeeds); another finished task is ErrNotCancellable.
func (s *Service) Cancel(ctx context.Context, actor Actor, id string) (tasks.Task, error) {
	h, err := s.load(ctx, actor, id)
	if err != nil {
		return tasks.Task{}, err
	}
	if cur := h.Task(h.ID); cur.Status == tasks.Cancelled {
		return cur, nil
	}
	t, err := s.store.Cancel(ctx, h.ID, s.clock.Now(), true)
	if errors.Is(err, tasks.ErrTerminal) {
		if cur, lerr := s.load(ctx, actor, id); lerr == nil && cur.Task(cur.ID).Status == tasks.Cancelled {
			return cur.Task(cur.ID), nil // cancelled concurrently
		}
		return tasks.Task{}, fmt.Errorf("%w: %w", ErrNotCancellable, err)
	}
	return t, err
}

// load returns the task head (without the file) the actor may see: after
// authorize, any task for RoleAdmin, else only the actor's own. For an
// agent, another caller's task is ErrTaskNotFound like a missing one:
// the agent is allowed to read tasks, a task id addresses the agent's own
// tasks, and a 403 there would confirm that the id exists.
func (s *Service) load(ctx context.Context, actor Actor, id string) (taskHead, error) {
	if err := actor.authorize(); err != nil {
		return taskHead{}, err
	}
	var h taskHead
	q := s.db.NewSelect().Model(&h).Where("id = ?", id)
	if !actor.HasRole(RoleAdmin) {
		q = q.Where("owner_subject = ?", actor.Subject)
	}
	err := q.Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return taskHead{}, ErrTaskNotFound
	}
	if err != nil {
		return taskHead{}, fmt.Errorf("load device assignment task: %w", err)
	}
	return h, nil
}
