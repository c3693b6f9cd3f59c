package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/internal/envconf"
)

// stuckAfter is how overdue a Pending row must be before an operator may
// replay it as stuck.
const stuckAfter = 10 * time.Minute

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// outboxCommand runs the operator subcommands. They never delete events and
// never change a delivered event; changes require --operator and --reason
// and are written to the audit trail in the same transaction.
func outboxCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("relay outbox "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		status    = fs.String("status", "", "list: pending|delivering|delivered|failed")
		eventType = fs.String("type", "", "list: event_type")
		corr      = fs.String("correlation-id", "", "list: correlation_id")
		limit     = fs.Int("limit", 50, "list: at most this many (1..500)")
		asJSON    = fs.Bool("json", false, "print JSON")
		payload   = fs.Bool("payload", false, "show: include the payload (may hold personal data)")
		operator  = fs.String("operator", "", "replay, release-leases: who (required)")
		reason    = fs.String("reason", "", "replay, release-leases: why (required)")
		batchID   = fs.String("batch-id", "", "replay: batch id (default: generated)")
		owner     = fs.String("owner", "", "release-leases: only this lease owner (default: all)")
		eventIDs  multiFlag
	)
	fs.Var(&eventIDs, "event-id", "replay: event id (repeatable)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}

	r := envconf.New(getenv)
	dbURL := r.URL("DATABASE_URL", "postgres", "postgresql")
	redisURL := r.String("REDIS_URL", "") // optional here; replay uses it
	if redisURL != "" {
		redisURL = r.URL("REDIS_URL", "redis", "rediss")
	}
	queueName := r.String("ASYNQ_QUEUE", "default")
	if err := r.Err(); err != nil {
		fmt.Fprintf(stderr, "relay outbox: configuration: %v\n", err)
		return exitUsage
	}
	needWho := func() bool {
		if strings.TrimSpace(*operator) == "" || strings.TrimSpace(*reason) == "" {
			fmt.Fprintf(stderr, "relay outbox %s: --operator and --reason are required for changes; they are written to the audit trail\n", sub)
			return false
		}
		return true
	}
	db, err := postgres.Open(ctx, postgres.Config{URL: dbURL, MaxOpenConns: 2})
	if err != nil {
		fmt.Fprintf(stderr, "relay outbox: %v\n", err)
		return exitError
	}
	defer db.Close()
	store, err := postgres.NewOutboxStore(db, postgres.OutboxConfig{})
	if err != nil {
		fmt.Fprintf(stderr, "relay outbox: %v\n", err)
		return exitError
	}
	audit := postgres.NewOutboxAuditWriter(postgres.AuditConfig{})
	now := time.Now()

	switch sub {
	case "list":
		f := ports.OutboxFilter{EventType: *eventType, CorrelationID: *corr, Limit: *limit}
		if *status != "" {
			st, ok := parseStatus(*status)
			if !ok {
				fmt.Fprintf(stderr, "relay outbox list: --status %q is not pending, delivering, delivered or failed\n", *status)
				return exitUsage
			}
			f.Status = st
		}
		evs, err := store.List(ctx, f)
		if err != nil {
			fmt.Fprintf(stderr, "relay outbox list: %v\n", err)
			return exitError
		}
		if *asJSON {
			views := make([]eventView, len(evs))
			for i, ev := range evs {
				views[i] = viewOf(ev, false)
			}
			return printJSON(stdout, views)
		}
		tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "EVENT_ID\tTYPE\tSTATUS\tRETRIES\tNEXT_ATTEMPT\tLAST_ERROR")
		for _, ev := range evs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", ev.EventID, ev.EventType, ev.Status, ev.RetryCount, ev.NextAttemptAt.Format(time.RFC3339), ev.LastErrorCode)
		}
		_ = tw.Flush()
		return exitOK

	case "show":
		// The id may come before or after the flags: show [--payload] EVENT_ID.
		if fs.NArg() < 1 {
			fmt.Fprintln(stderr, "relay outbox show: give exactly one EVENT_ID")
			return exitUsage
		}
		id := fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil || fs.NArg() != 0 {
			fmt.Fprintln(stderr, "relay outbox show: give exactly one EVENT_ID")
			return exitUsage
		}
		ev, err := store.Get(ctx, id)
		if errors.Is(err, ports.ErrNotFound) {
			fmt.Fprintf(stderr, "relay outbox show: no event %s\n", id)
			return exitError
		} else if err != nil {
			fmt.Fprintf(stderr, "relay outbox show: %v\n", err)
			return exitError
		}
		return printJSON(stdout, viewOf(ev, *payload))

	case "replay":
		if len(eventIDs) == 0 {
			fmt.Fprintln(stderr, "relay outbox replay: give at least one --event-id")
			return exitUsage
		}
		if !needWho() {
			return exitUsage
		}
		if *batchID == "" {
			*batchID = "replay-" + now.UTC().Format("20060102T150405Z") + "-" + uuid.NewString()[:8]
		}
		var tasks *asynq.Inspector
		if redisURL == "" {
			fmt.Fprintln(stderr, "relay outbox replay: warning: REDIS_URL is not set, so retained asynq tasks are not deleted; "+
				"a replayed event whose task asynq still holds (completed or archived) is absorbed as a duplicate and its consumer does not run again")
		} else {
			opt, err := asynq.ParseRedisURI(redisURL)
			if err != nil {
				fmt.Fprintln(stderr, "relay outbox replay: REDIS_URL is not a valid redis:// URL (value hidden)")
				return exitUsage
			}
			tasks = asynq.NewInspector(opt)
			defer tasks.Close()
		}
		// The replay and its audit record commit together or not at all.
		var (
			res     ports.ReplayResult
			deleted int
		)
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			txStore, err := postgres.NewOutboxStore(tx, postgres.OutboxConfig{})
			if err != nil {
				return err
			}
			if res, err = txStore.Replay(ctx, ports.ReplayParams{
				EventIDs: eventIDs, Now: now, StuckAfter: stuckAfter,
				Request: outbox.ReplayRequest{Operator: *operator, Reason: *reason, BatchID: *batchID},
			}); err != nil {
				return err
			}
			// Before commit, while the rows are still locked and not yet
			// Pending: deleted after commit, a relay could re-publish first
			// and be absorbed by the task we were about to delete.
			if tasks != nil {
				if deleted, err = deleteTasks(tasks, queueName, res.Replayed); err != nil {
					return err
				}
			}
			return audit.WriteAudit(ctx, tx, ports.AuditRecord{
				Action: "outbox.replay", Actor: *operator, ResourceType: "outbox_batch", ResourceID: *batchID,
				Outcome: "accepted", Reason: *reason, After: strings.Join(res.Replayed, ","), At: now,
			})
		})
		if err != nil {
			fmt.Fprintf(stderr, "relay outbox replay: nothing changed: %v\n", err)
			return exitError
		}
		return printJSON(stdout, map[string]any{"batch_id": *batchID, "replayed": res.Replayed, "skipped": res.Skipped, "asynq_tasks_deleted": deleted})

	case "release-leases":
		if !needWho() {
			return exitUsage
		}
		resID := *owner
		if resID == "" {
			resID = "*"
		}
		var n int
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			txStore, err := postgres.NewOutboxStore(tx, postgres.OutboxConfig{})
			if err != nil {
				return err
			}
			if n, err = txStore.ReleaseLeases(ctx, *owner, now); err != nil {
				return err
			}
			return audit.WriteAudit(ctx, tx, ports.AuditRecord{
				Action: "outbox.release_leases", Actor: *operator, ResourceType: "outbox_lease_owner", ResourceID: resID,
				Outcome: "accepted", Reason: *reason, After: fmt.Sprint(n), At: now,
			})
		})
		if err != nil {
			fmt.Fprintf(stderr, "relay outbox release-leases: nothing changed: %v\n", err)
			return exitError
		}
		return printJSON(stdout, map[string]any{"released": n, "owner": *owner})
	}
	fmt.Fprintf(stderr, "relay outbox: unknown subcommand %q (list, show, replay, release-leases)\n", sub)
	return exitUsage
}

// deleteTasks deletes the asynq task of each replayed event (the task id is
// the event_id) from queue q, so the relay's re-publish is enqueued rather
// than absorbed as a duplicate of a completed or archived task. A missing
// task or queue is fine. It returns how many tasks it deleted; an active
// task (its consumer is running) is an error, which aborts the replay.
func deleteTasks(ins *asynq.Inspector, q string, eventIDs []string) (int, error) {
	n := 0
	for _, id := range eventIDs {
		err := ins.DeleteTask(q, id)
		switch {
		case err == nil:
			n++
		case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
		default:
			return n, fmt.Errorf("delete asynq task %s in queue %s (if it is active, retry when its consumer finishes): %w", id, q, err)
		}
	}
	return n, nil
}

type eventView struct {
	EventID        string          `json:"event_id"`
	EventType      string          `json:"event_type"`
	PayloadVersion int             `json:"payload_version"`
	Status         string          `json:"status"`
	StatusCode     int16           `json:"status_code"`
	AggregateType  string          `json:"aggregate_type"`
	AggregateID    string          `json:"aggregate_id"`
	ResourceType   string          `json:"resource_type"`
	ResourceID     string          `json:"resource_id"`
	RequestID      string          `json:"request_id"`
	CorrelationID  string          `json:"correlation_id"`
	RetryCount     int             `json:"retry_count"`
	NextAttemptAt  time.Time       `json:"next_attempt_at"`
	LeaseOwner     string          `json:"lease_owner,omitempty"`
	LastErrorCode  string          `json:"last_error_code,omitempty"`
	LastError      string          `json:"last_error_message,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	DeliveredAt    *time.Time      `json:"delivered_at,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
}

func viewOf(ev outbox.Event, withPayload bool) eventView {
	v := eventView{
		EventID: ev.EventID, EventType: ev.EventType, PayloadVersion: ev.PayloadVersion,
		Status: ev.Status.String(), StatusCode: int16(ev.Status),
		AggregateType: ev.AggregateType, AggregateID: ev.AggregateID, ResourceType: ev.ResourceType, ResourceID: ev.ResourceID,
		RequestID: ev.RequestID, CorrelationID: ev.CorrelationID, RetryCount: ev.RetryCount, NextAttemptAt: ev.NextAttemptAt,
		LeaseOwner: ev.Lease.Owner, LastErrorCode: ev.LastErrorCode, LastError: ev.LastErrorMessage,
		CreatedAt: ev.CreatedAt, DeliveredAt: ev.DeliveredAt,
	}
	if withPayload {
		v.Payload = ev.Payload
	}
	return v
}

func parseStatus(s string) (outbox.Status, bool) {
	for _, st := range []outbox.Status{outbox.Pending, outbox.Delivering, outbox.Delivered, outbox.Failed} {
		if strings.EqualFold(st.String(), s) {
			return st, true
		}
	}
	return 0, false
}

func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return exitError
	}
	return exitOK
}
