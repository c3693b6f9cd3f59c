package topup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/schedule"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/periodic"
	"github.com/july/template/core/ports"
)

// The daily reconciliation: a periodic command (core/periodic) that every
// relay runs and that commits each day's occurrence once, as a
// topup.reconciliation.due event whose event_id, request_id and
// correlation_id are the occurrence's stable id.
const (
	// ReconcileCommand names the command (its state row and its ids).
	ReconcileCommand = "topup.reconcile_daily"
	// EventReconcileDue is the occurrence's event type.
	EventReconcileDue = "topup.reconciliation.due"
	// ReconcileConsumer names the reconciler in its consumption records:
	// one row per occurrence it ran.
	ReconcileConsumer = "topup-reconcile"
	// ReconcileStuckAfter is how old an order still waiting for its
	// credit may be before the reconciliation reports it.
	ReconcileStuckAfter = time.Hour
)

// chinaTime is UTC+8 (China keeps no daylight saving time); a fixed zone
// needs no tzdata on the host.
var chinaTime = time.FixedZone("CST", 8*3600)

// ReconcileDue is the payload of topup.reconciliation.due.
type ReconcileDue struct {
	// ScheduledAt is the occurrence's scheduled time (UTC).
	ScheduledAt time.Time `json:"scheduled_at"`
}

// ReconcileCommandDecl is the daily reconciliation at 02:00 China time.
// Catch-up Once: after downtime one reconciliation covers the missed
// days (it looks at everything still uncredited, not at one day).
func ReconcileCommandDecl() periodic.Command {
	return periodic.Command{
		Name:     ReconcileCommand,
		Schedule: schedule.MustCron("0 2 * * *", chinaTime),
		CatchUp:  periodic.Once,
		Event: func(o periodic.Occurrence) (outbox.NewParams, error) {
			return outbox.NewParams{
				EventType: EventReconcileDue, PayloadVersion: 1,
				AggregateType: "topup_reconciliation", AggregateID: ReconcileCommand,
				ResourceType: "topup_reconciliation", ResourceID: o.ID,
				BusinessKey: o.At.Format("2006-01-02"),
				Payload:     ReconcileDue{ScheduledAt: o.At},
			}, nil
		},
	}
}

// Reconciler runs the daily reconciliation for topup.reconciliation.due.
type Reconciler struct {
	db    *bun.DB
	clock ports.Clock
	log   *slog.Logger
}

// NewReconciler returns a Reconciler on db.
func NewReconciler(db *bun.DB, clock ports.Clock, log *slog.Logger) (*Reconciler, error) {
	if db == nil {
		return nil, errors.New("topup: NewReconciler needs a db")
	}
	if clock == nil {
		clock = ports.SystemClock
	}
	if log == nil {
		log = slog.Default()
	}
	return &Reconciler{db: db, clock: clock, log: log}, nil
}

// Consumer is the relay worker's consumer of topup.reconciliation.due.
func (r *Reconciler) Consumer() queue.Consumer {
	return queue.Consumer{EventType: EventReconcileDue, Name: ReconcileConsumer, Handler: queue.Handle(r.Reconcile)}
}

// Reconcile runs one occurrence once: it records its consumption first
// (a duplicate delivery changes nothing) and counts the orders created
// more than ReconcileStuckAfter before the occurrence that are still
// waiting for their credit, reporting them with a WARN. A real service
// would compare with the payment channel's statement here.
func (r *Reconciler) Reconcile(ctx context.Context, env outbox.Envelope, p ReconcileDue) error {
	return r.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		first, err := pgoutbox.RecordConsumption(ctx, tx, env.EventID, ReconcileConsumer, r.clock.Now().UTC())
		if err != nil || !first {
			return err
		}
		n, err := tx.NewSelect().Table(tableOrder).
			Where("status = ? AND created_at < ?", StatusCreated, p.ScheduledAt.Add(-ReconcileStuckAfter)).Count(ctx)
		if err != nil {
			return fmt.Errorf("topup: reconcile %s: %w", p.ScheduledAt.Format(time.RFC3339), err)
		}
		log := r.log.With("occurrence", p.ScheduledAt.Format(time.RFC3339), "event_id", env.EventID)
		if n > 0 {
			log.WarnContext(ctx, "topup reconciliation: orders still waiting for their credit", "count", n)
		} else {
			log.InfoContext(ctx, "topup reconciliation: every order credited")
		}
		return nil
	})
}
