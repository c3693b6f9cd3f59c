package devices

import (
	"context"
	"errors"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgidem"
	"github.com/july/template/adapters/postgres/pgtasks"
	"github.com/july/template/core/ports"
)

// Names of this domain's tables in the relay's sweeps (logs, metrics).
const (
	// SweepName labels ex_devices_task in the task-recovery sweep and the
	// idempotency retention.
	SweepName = "devices.assignment"
	// recoveryRequestPrefix starts the request_id of a re-delivery event:
	// a stable command id for work that has no HTTP request, so the chain
	// stays traceable by request_id (docs/architecture.md, house rules).
	recoveryRequestPrefix = "task-recovery-"
)

// NewTaskTable registers ex_devices_task with the relay's task-recovery
// sweep (core/sweep.TaskRecovery). Its delivery appends a new
// EventAssignmentRequested event for the task, in the recovery's
// transaction: a new event_id, because it is a new delivery request (the
// lost message's id may still be retained or archived by the queue, which
// would absorb a re-publish under it). The relay delivers it like the
// upload's event, and the worker's claim makes a second copy harmless.
func NewTaskTable(db *bun.DB, clock ports.Clock) (ports.TaskTable, error) {
	if db == nil || clock == nil {
		return ports.TaskTable{}, errors.New("devices: NewTaskTable needs a db and a clock")
	}
	// The event commits with the task's return to Pending, or neither does.
	return pgtasks.NewTaskTable(db, SweepName, TaskTable, func(ctx context.Context, tx bun.IDB, id string) error {
		return appendRequested(ctx, tx, id, recoveryRequestPrefix+id, clock.Now().UTC())
	})
}

// NewIdempotencyTable registers ex_devices_task's upload idempotency
// records with the relay's retention job
// (core/sweep.IdempotencyRetention): after the window the key and stored
// 202 body are cleared and the task row stays, so a repeated upload with
// the expired key creates a new task.
func NewIdempotencyTable(db *bun.DB) (ports.IdempotencyTable, error) {
	records, err := pgidem.NewExpirer(db, TaskTable)
	if err != nil {
		return ports.IdempotencyTable{}, err
	}
	return ports.IdempotencyTable{Name: SweepName, Records: records}, nil
}
