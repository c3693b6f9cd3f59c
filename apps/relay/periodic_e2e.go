//go:build e2efault

package main

// A periodic command compiled only into the end-to-end tests' relay (go
// build -tags e2efault) and declared only when E2E_PERIODIC_EVERY is set:
// "e2e.tick" every E2E_PERIODIC_EVERY (catch-up Each), whose consumer
// records each occurrence's consumption once (consumer "e2e-tick").
// Building the event of every fifth occurrence (scheduled on a Unix
// second divisible by 5), inside the transaction that holds the
// command's row, prints "E2E_TICK_BUILDING <scheduled time>" and then
// waits E2E_PERIODIC_HOLD, so a test can kill the relay that is
// committing an occurrence, inside its transaction.

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/periodic"
)

// tickEvent is the payload of "e2e.tick" events.
type tickEvent struct {
	ScheduledAt time.Time `json:"scheduled_at"`
}

func init() {
	every, err := time.ParseDuration(os.Getenv("E2E_PERIODIC_EVERY"))
	if err != nil || every <= 0 {
		return
	}
	hold, _ := time.ParseDuration(os.Getenv("E2E_PERIODIC_HOLD"))
	appDomains = append(appDomains, domain.Domain{
		Name: "e2e.periodic",
		Commands: []periodic.Command{{
			Name: "e2e.tick", Schedule: periodic.Every(every), CatchUp: periodic.Each,
			Event: func(o periodic.Occurrence) (outbox.NewParams, error) {
				if hold > 0 && o.At.Unix()%5 == 0 {
					fmt.Fprintf(os.Stderr, "E2E_TICK_BUILDING %s\n", o.At.Format(time.RFC3339Nano))
					time.Sleep(hold)
				}
				return outbox.NewParams{EventType: "e2e.tick", PayloadVersion: 1, AggregateType: "tick", AggregateID: "e2e.tick",
					ResourceType: "tick", ResourceID: o.ID, Payload: tickEvent{ScheduledAt: o.At}}, nil
			},
		}},
		Relay: func(d domain.RelayDeps) (domain.Relay, error) {
			return domain.Relay{Consumers: []queue.Consumer{{EventType: "e2e.tick", Name: "e2e-tick",
				Handler: queue.Handle(func(ctx context.Context, env outbox.Envelope, _ tickEvent) error {
					return d.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
						_, err := pgoutbox.RecordConsumption(ctx, tx, env.EventID, "e2e-tick", time.Now())
						return err
					})
				})}}}, nil
		},
	})
}
