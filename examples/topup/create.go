package topup

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// create is POST /api/v1/topups. The idempotency middleware has validated
// the key and fingerprinted the body; everything that is written, the key,
// the order, the event and the stored response, commits in one
// transaction or not at all. The transaction runs statements on its own
// connection only: no Redis call and no second pooled connection.
func (a *API) create(c echo.Context) error {
	ctx := c.Request().Context()
	key, ok := idemhttp.KeyFrom(ctx)
	if !ok {
		return httpx.Internal(fmt.Errorf("topup: create route without idempotency middleware"))
	}
	body, err := httpx.ReadBody(c) // held once, shared with the idempotency middleware
	if err != nil {
		return err // *http.MaxBytesError renders as 413
	}
	req, err := parseCreate(body)
	if err != nil {
		return err
	}

	now := a.clock.Now().UTC().Truncate(time.Microsecond) // Postgres precision
	order := &Order{
		ID: uuid.NewString(), AgentID: key.Scope.Principal, AmountCents: req.AmountCents,
		Channel: req.Channel, Status: StatusCreated, CreatedAt: now, UpdatedAt: now,
	}
	order.PayURL = a.links.URL(order.ID)
	// Read before the transaction: it may call Redis and take another
	// pooled connection (see configuredLimit). Applied inside, below.
	limit, err := a.configuredLimit(ctx)
	if err != nil {
		return err
	}
	var (
		replay *ports.StoredResponse
		resp   []byte
	)
	err = a.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		d, stored, err := pgidem.Insert(ctx, tx, order, key)
		if err != nil {
			return err // ErrKeyReused 422, ErrInProgress 409 (idemhttp.MapError)
		}
		if d == idempotency.DecisionReplay {
			replay = stored
			return nil
		}
		// After the replay check: a retry of an accepted top-up replays
		// even if the limit was lowered since.
		if err := checkLimit(order.AmountCents, limit); err != nil {
			return err
		}
		ev, err := createdEvent(order, httpx.RequestID(ctx), now)
		if err != nil {
			return err
		}
		if err := pgoutbox.Append(ctx, tx, ev); err != nil {
			return err
		}
		if resp, err = json.Marshal(orderView(order)); err != nil {
			return err
		}
		return pgidem.SaveResponse(ctx, tx, order, ports.StoredResponse{
			ResultRef: order.ID, Status: http.StatusCreated, Body: resp,
		})
	})
	switch {
	case err != nil:
		return err
	case replay != nil:
		return idemhttp.Replay(c, *replay)
	}
	return c.JSONBlob(http.StatusCreated, resp)
}

// createdEvent is the topup.created event of a new order. request_id is
// the HTTP request's id; correlation_id is the order id, the business
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
