package testdomain

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// KeyMaxAmount is the domain's config key: the largest order an operator
// allows, at most MaxAmount. Create reads it before its transaction.
const KeyMaxAmount = "td.limits.max_amount"

// ConfigSpecs returns the domain's config keys.
func ConfigSpecs() []sysconfig.Spec {
	lo, hi := int64(1), int64(MaxAmount)
	return []sysconfig.Spec{{
		Key: KeyMaxAmount, Module: "td", Type: sysconfig.TypeInt, Default: fmt.Sprint(MaxAmount), Min: &lo, Max: &hi,
		Description: fmt.Sprintf("测试域单笔订单金额上限（%d-%d），超过时创建订单返回 422", lo, hi),
	}}
}

// Actor is the authenticated caller a use case runs for.
type Actor struct {
	Subject string
	Roles   []string
}

// ErrForbidden: the actor lacks RoleWriter (403, before anything is read).
var ErrForbidden = errors.New("testdomain: actor lacks role " + RoleWriter)

// ErrNotFound: no such order, or another owner's (the same 404).
var ErrNotFound = errors.New("testdomain: order not found")

// Service runs the use cases, each owning its transaction; the handlers
// only translate HTTP to these calls.
type Service struct {
	db     *bun.DB
	clock  ports.Clock
	config *configsvc.Service
}

// NewService returns the use cases on db. A nil clock is time.Now; a nil
// config applies MaxAmount only.
func NewService(db *bun.DB, clock ports.Clock, config *configsvc.Service) (*Service, error) {
	if db == nil {
		return nil, errors.New("testdomain: NewService needs a db")
	}
	if clock == nil {
		clock = ports.SystemClock
	}
	return &Service{db: db, clock: clock, config: config}, nil
}

// CreateCommand is one validated create request; RequestID is the
// event's request_id (empty: Key.RequestID).
type CreateCommand struct {
	Key       ports.IdempotencyKey
	Request   CreateRequest
	RequestID string
}

// CreateResult is a new order (Order, and Body, its stored 201 JSON) or
// the stored answer of an earlier request with the same key (Replay).
type CreateResult struct {
	Replay *ports.StoredResponse
	Order  OrderView
	Body   []byte
}

// Create stores the order, its idempotency record and its event in one
// transaction. The configured limit is read before it: that read may call
// Redis and take a second pooled connection.
func (s *Service) Create(ctx context.Context, actor Actor, cmd CreateCommand) (CreateResult, error) {
	if err := actor.mayCreate(); err != nil {
		return CreateResult{}, err
	}
	limit, err := s.limit(ctx)
	if err != nil {
		return CreateResult{}, err
	}
	now := s.clock.Now().UTC().Truncate(time.Microsecond) // Postgres precision
	o := &Order{ID: uuid.NewString(), Owner: actor.Subject, Amount: cmd.Request.Amount, Note: cmd.Request.Note,
		Status: StatusCreated, CreatedAt: now, UpdatedAt: now}
	var res CreateResult
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		d, stored, err := pgidem.Insert(ctx, tx, o, cmd.Key)
		if err != nil {
			return err
		}
		if d == idempotency.DecisionReplay {
			res.Replay = stored
			return nil
		}
		if o.Amount > limit { // after the replay check: a retry replays even if the limit fell
			return &ValidationError{Code: CodeAmountInvalid, Field: "amount",
				Reason: fmt.Sprintf("超过单笔上限 %d（系统配置 %s）", limit, KeyMaxAmount)}
		}
		ev, err := outbox.New(outbox.NewParams{
			EventID: uuid.NewString(), EventType: EventCreated, PayloadVersion: 1,
			AggregateType: tableOrder, AggregateID: o.ID, ResourceType: tableOrder, ResourceID: o.ID,
			BusinessKey: "td:" + o.ID, RequestID: cmp.Or(cmd.RequestID, cmd.Key.RequestID), CorrelationID: o.ID,
			Payload: Created{OrderID: o.ID, Owner: o.Owner, Amount: o.Amount}, Now: now,
		})
		if err != nil {
			return err
		}
		if err := pgoutbox.Append(ctx, tx, ev); err != nil {
			return err
		}
		res.Order = orderView(o)
		if res.Body, err = json.Marshal(res.Order); err != nil {
			return err
		}
		return pgidem.SaveResponse(ctx, tx, o, ports.StoredResponse{ResultRef: o.ID, Status: http.StatusCreated, Body: res.Body})
	})
	if err != nil {
		return CreateResult{}, err
	}
	return res, nil
}

// Order returns the actor's order id; another owner's is ErrNotFound.
func (s *Service) Order(ctx context.Context, actor Actor, id string) (OrderView, error) {
	var o Order
	err := s.db.NewSelect().Model(&o).Where("id = ? AND owner = ?", id, actor.Subject).Limit(1).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return OrderView{}, ErrNotFound
	case err != nil:
		return OrderView{}, fmt.Errorf("testdomain: read order %s: %w", id, err)
	}
	return orderView(&o), nil
}

var errNoActor = errors.New("testdomain: use case called without an actor")

// mayCreate is the create's first step; the route also runs it before the
// body is read (API.Register).
func (a Actor) mayCreate() error {
	switch {
	case a.Subject == "":
		return errNoActor
	case !slices.Contains(a.Roles, RoleWriter):
		return ErrForbidden
	}
	return nil
}

// limit is the configured KeyMaxAmount, MaxAmount without a config. It
// never fails for a registered key (the default stands in while Postgres
// and Redis are down), so an error is a wiring bug.
func (s *Service) limit(ctx context.Context) (int64, error) {
	if s.config == nil {
		return MaxAmount, nil
	}
	v, err := s.config.Value(ctx, KeyMaxAmount)
	if err != nil {
		return 0, fmt.Errorf("testdomain: read %s: %w", KeyMaxAmount, err)
	}
	return v.Int(), nil
}
