package topup

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// CreateCommand is one create request, already validated (parseCreate).
type CreateCommand struct {
	// Key is the request's idempotency key, scoped to the actor.
	Key ports.IdempotencyKey
	// Request is the top-up asked for.
	Request CreateRequest
	// RequestID is the entry command's id; the outbox event carries it.
	// Empty: Key.RequestID, the caller's key.
	RequestID string
}

// CreateResult is Create's answer: the new order, or, for a retry of an
// earlier request with the same key, that request's stored answer.
type CreateResult struct {
	// Replay is the first request's stored answer (status and body, to
	// be sent as they are); nil for a new order.
	Replay *ports.StoredResponse
	// Order is the new order and Body its JSON, the 201 body stored for
	// replays; zero with Replay.
	Order OrderView
	Body  []byte
}

// Create tops up the actor's wallet; the actor needs RoleAgent (else
// ErrForbidden, before anything is read or written). Everything that is written, the
// idempotency key, the order, the topup.created event and the stored
// answer, commits in one transaction or not at all. The transaction runs
// statements on its own connection only: no Redis call and no second
// pooled connection (the configured limit is read before it).
func (s *Service) Create(ctx context.Context, actor Actor, cmd CreateCommand) (CreateResult, error) {
	if err := actor.require(RoleAgent); err != nil {
		return CreateResult{}, err // nothing stored, no key reserved
	}
	now := s.clock.Now().UTC().Truncate(time.Microsecond) // Postgres precision
	order := &Order{
		ID: uuid.NewString(), AgentID: actor.Subject, AmountCents: cmd.Request.AmountCents,
		Channel: cmd.Request.Channel, Status: StatusCreated, CreatedAt: now, UpdatedAt: now,
	}
	order.PayURL = s.links.URL(order.ID)
	// Read before the transaction: it may call Redis and take another
	// pooled connection (see configuredLimit). Applied inside, below.
	limit, err := s.configuredLimit(ctx)
	if err != nil {
		return CreateResult{}, err
	}
	var res CreateResult
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The private link is bound in its own statement (pgidem.ExecBound),
		// never formatted into the INSERT's text.
		payURL := order.PayURL
		order.PayURL = ""
		d, stored, err := pgidem.Insert(ctx, tx, order, cmd.Key)
		order.PayURL = payURL
		if err != nil {
			return err // ErrKeyReused 422, ErrInProgress 409 (idemhttp.MapError)
		}
		if d == idempotency.DecisionReplay {
			res.Replay = stored
			return nil
		}
		if _, err := pgidem.ExecBound(ctx, tx, `UPDATE ex_topup_order SET pay_url = $1 WHERE id = $2`, payURL, order.ID); err != nil {
			return fmt.Errorf("store pay_url: %w", err)
		}
		// After the replay check: a retry of an accepted top-up replays
		// even if the limit was lowered since.
		if err := checkLimit(order.AmountCents, limit); err != nil {
			return err
		}
		ev, err := createdEvent(order, cmp.Or(cmd.RequestID, cmd.Key.RequestID), now)
		if err != nil {
			return err
		}
		if err := pgoutbox.Append(ctx, tx, ev); err != nil {
			return err
		}
		res.Order = orderView(order)
		if res.Body, err = json.Marshal(res.Order); err != nil {
			return err
		}
		return pgidem.SaveResponse(ctx, tx, order, ports.StoredResponse{
			ResultRef: order.ID, Status: http.StatusCreated, Body: res.Body,
		})
	})
	if err != nil {
		return CreateResult{}, err
	}
	return res, nil
}

// createdEvent is the topup.created event of a new order. request_id is
// the entry command's id; correlation_id is the order id, the business
// chain every later event of this order (payment, refund) shares.
func createdEvent(o *Order, requestID string, now time.Time) (outbox.Event, error) {
	return outbox.New(outbox.NewParams{
		EventID:        uuid.NewString(),
		EventType:      EventCreated,
		PayloadVersion: 1,
		AggregateType:  AggregateType,
		AggregateID:    o.ID,
		ResourceType:   AggregateType,
		ResourceID:     o.ID,
		BusinessKey:    "topup:" + o.ID,
		RequestID:      requestID,
		CorrelationID:  o.ID,
		Payload:        Created{TopupID: o.ID, AgentID: o.AgentID, AmountCents: o.AmountCents, Channel: o.Channel},
		Now:            now,
	})
}
