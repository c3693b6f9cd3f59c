package outboxcmd

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

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

// Exit codes, as the relay binary documents them.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// Usage lists the subcommands, for the binary's help.
const Usage = `  relay outbox list [flags]          list events (--status, --type, --correlation-id, --limit, --json)
  relay outbox show EVENT_ID         show one event (never its payload unless --payload)
  relay outbox replay --event-id ID [--event-id ID ...] --operator WHO --reason WHY [--batch-id B]
                                     (with REDIS_URL set, deletes the retained Asynq task so the consumer runs again)
  relay outbox release-leases [--owner OWNER] --operator WHO --reason WHY
  relay outbox consumer-failures [--limit N] [--json]
                                     open consumer failures (delivered events whose consumer gave up); replay them by id
  relay outbox stuck [--limit N] [--json]
                                     aggregates whose ordered events wait behind a failed or unconsumed event; replay the blocker by id
`

// Deps are what the commands run on, opened only once the arguments are
// valid. Store reads events; Operator changes them. QueueKnown is false
// when no queue was configured (replay then warns that retained tasks stay).
type Deps struct {
	Store    relay.OperatorStore
	Operator *relay.Operator
	Audit    ports.AuditInbox
}

// ErrConfig marks an OpenFunc error caused by the environment (exit 2).
var ErrConfig = errors.New("configuration")

// OpenFunc opens the Deps and returns a func that closes them.
type OpenFunc func(ctx context.Context) (Deps, func(), error)

// opCLI runs the operator subcommands, one method each. They never delete
// events and never change a delivered event; changes require --operator
// and --reason and are audited in the same transaction (relay.Operator),
// with the OS user and host the command ran as (origin).
type opCLI struct {
	open           OpenFunc
	stdout, stderr io.Writer
	store          relay.OperatorStore
	op             *relay.Operator
	audit          ports.AuditInbox
}

// Run runs `relay outbox ARGS` and returns the exit code; help prints usage.
func Run(ctx context.Context, args []string, open OpenFunc, usage string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c := &opCLI{open: open, stdout: stdout, stderr: stderr}
	cmds := map[string]func(context.Context, []string) int{
		"list": c.list, "show": c.show, "replay": c.replay, "release-leases": c.releaseLeases,
		"consumer-failures": c.consumerFailures, "stuck": c.stuck,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "relay outbox: unknown subcommand %q (list, show, replay, release-leases, consumer-failures, stuck)\n", args[0])
		return exitUsage
	}
	return cmd(ctx, args[1:])
}

func (c *opCLI) list(ctx context.Context, args []string) int {
	fs := c.flags("list")
	status := fs.String("status", "", "pending|delivering|delivered|failed")
	eventType := fs.String("type", "", "event_type")
	corr := fs.String("correlation-id", "", "correlation_id")
	limit := fs.Int("limit", 50, "at most this many (1..500)")
	asJSON := fs.Bool("json", false, "print JSON")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	if !c.textArg("list", "type", *eventType, outbox.MaxEventTypeLen) || !c.textArg("list", "correlation-id", *corr, outbox.MaxIDLen) {
		return exitUsage
	}
	f := ports.OutboxFilter{EventType: *eventType, CorrelationID: *corr, Limit: *limit}
	if *status != "" {
		st, ok := parseStatus(*status)
		if !ok {
			fmt.Fprintf(c.stderr, "relay outbox list: --status %q is not pending, delivering, delivered or failed\n", *status)
			return exitUsage
		}
		f.Status = st
	}
	return c.with(ctx, "list", func(ctx context.Context) int {
		evs, err := c.store.List(ctx, f)
		if err != nil {
			return c.fail("list", err)
		}
		if *asJSON {
			views := make([]eventView, len(evs))
			for i, ev := range evs {
				views[i] = viewOf(ev, false)
			}
			return c.printJSON(views)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "EVENT_ID\tTYPE\tSTATUS\tRETRIES\tNEXT_ATTEMPT\tLAST_ERROR")
		for _, ev := range evs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", ev.EventID, ev.EventType, ev.Status, ev.RetryCount, ev.NextAttemptAt.Format(time.RFC3339), ev.LastErrorCode)
		}
		_ = tw.Flush()
		return exitOK
	})
}

func (c *opCLI) consumerFailures(ctx context.Context, args []string) int {
	fs := c.flags("consumer-failures")
	limit := fs.Int("limit", 50, "at most this many (1..500)")
	asJSON := fs.Bool("json", false, "print JSON")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	return c.with(ctx, "consumer-failures", func(ctx context.Context) int {
		fails, err := c.store.OpenConsumerFailures(ctx, ports.ConsumerFailureFilter{Limit: *limit})
		if err != nil {
			return c.fail("consumer-failures", err)
		}
		if *asJSON {
			return c.printJSON(fails)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "EVENT_ID\tTYPE\tCODE\tFAILED_AT\tREPLAY_BATCH")
		for _, f := range fails {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.EventID, f.EventType, f.Code, f.FailedAt.Format(time.RFC3339), f.ReplayBatchID)
		}
		_ = tw.Flush()
		return exitOK
	})
}

func (c *opCLI) stuck(ctx context.Context, args []string) int {
	fs := c.flags("stuck")
	limit := fs.Int("limit", 50, "at most this many (1..500)")
	asJSON := fs.Bool("json", false, "print JSON")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	if *limit < 1 || *limit > 500 {
		fmt.Fprintf(c.stderr, "relay outbox stuck: --limit %d is outside 1..500\n", *limit)
		return exitUsage
	}
	return c.with(ctx, "stuck", func(ctx context.Context) int {
		aggs, err := c.store.StuckAggregates(ctx, time.Now(), *limit)
		if err != nil {
			return c.fail("stuck", err)
		}
		views := make([]stuckView, len(aggs))
		for i, a := range aggs {
			views[i] = stuckView{AggregateType: a.AggregateType, AggregateID: a.AggregateID, EventID: a.Blocker.EventID,
				EventType: a.Blocker.EventType, Reason: a.Reason, ErrorCode: a.Blocker.LastErrorCode, Since: a.Since, Waiting: a.Waiting}
		}
		if *asJSON {
			return c.printJSON(views)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "AGGREGATE\tBLOCKING_EVENT_ID\tTYPE\tREASON\tCODE\tSINCE\tWAITING")
		for _, v := range views {
			fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%d\n", v.AggregateType, v.AggregateID, v.EventID, v.EventType, v.Reason, v.ErrorCode, v.Since.Format(time.RFC3339), v.Waiting)
		}
		_ = tw.Flush()
		return exitOK
	})
}

func (c *opCLI) show(ctx context.Context, args []string) int {
	fs := c.flags("show")
	payload := fs.Bool("payload", false, "include the payload (may hold personal data)")
	// The id may come before or after the flags: show [--payload] EVENT_ID.
	if fs.Parse(args) != nil || fs.NArg() < 1 {
		fmt.Fprintln(c.stderr, "relay outbox show: give exactly one EVENT_ID")
		return exitUsage
	}
	id := fs.Arg(0)
	if fs.Parse(fs.Args()[1:]) != nil || fs.NArg() != 0 {
		fmt.Fprintln(c.stderr, "relay outbox show: give exactly one EVENT_ID")
		return exitUsage
	}
	return c.with(ctx, "show", func(ctx context.Context) int {
		ev, err := c.store.Get(ctx, id)
		if errors.Is(err, ports.ErrNotFound) {
			fmt.Fprintf(c.stderr, "relay outbox show: no event %s\n", id)
			return exitError
		} else if err != nil {
			return c.fail("show", err)
		}
		return c.printJSON(viewOf(ev, *payload))
	})
}

func (c *opCLI) replay(ctx context.Context, args []string) int {
	fs := c.flags("replay")
	var ids multiFlag
	fs.Var(&ids, "event-id", "event id (repeatable)")
	operator, reason := c.who(fs)
	batchID := fs.String("batch-id", "", "batch id (default: generated)")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	if len(ids) == 0 {
		fmt.Fprintln(c.stderr, "relay outbox replay: give at least one --event-id")
		return exitUsage
	}
	if !c.needWho("replay", *operator, *reason) || !c.textArg("replay", "batch-id", *batchID, outbox.MaxOperatorLen) {
		return exitUsage
	}
	return c.with(ctx, "replay", func(ctx context.Context) int {
		out, err := c.op.Replay(ctx, relay.ReplayCommand{
			EventIDs: ids, Operator: *operator, Reason: *reason, Origin: origin(), BatchID: *batchID,
			NewSuffixFunc: func() string { return uuid.NewString()[:8] },
		})
		if err != nil {
			fmt.Fprintf(c.stderr, "relay outbox replay: nothing changed: %v\n", err)
			return exitError
		}
		if out.TasksKept {
			fmt.Fprintln(c.stderr, "relay outbox replay: warning: REDIS_URL is not set, so events whose consumer failed are not replayed "+
				"(they need the queue: their retained task is deleted and the envelope enqueued again); failed and stuck events still are")
		}
		return c.printJSON(map[string]any{"batch_id": out.BatchID, "replayed": out.Replayed, "skipped": out.Skipped, "asynq_tasks_deleted": out.TasksDeleted})
	})
}

func (c *opCLI) releaseLeases(ctx context.Context, args []string) int {
	fs := c.flags("release-leases")
	owner := fs.String("owner", "", "only this lease owner (default: all)")
	operator, reason := c.who(fs)
	if fs.Parse(args) != nil {
		return exitUsage
	}
	if !c.needWho("release-leases", *operator, *reason) {
		return exitUsage
	}
	return c.with(ctx, "release-leases", func(ctx context.Context) int {
		ids, err := c.op.ReleaseLeases(ctx, relay.ReleaseCommand{Owner: *owner, Operator: *operator, Reason: *reason, Origin: origin()})
		if err != nil {
			fmt.Fprintf(c.stderr, "relay outbox release-leases: nothing changed: %v\n", err)
			return exitError
		}
		return c.printJSON(map[string]any{"released": len(ids), "event_ids": ids, "owner": *owner})
	})
}

// with opens the Deps, runs fn and closes them.
func (c *opCLI) with(ctx context.Context, sub string, fn func(ctx context.Context) int) int {
	deps, closeFn, err := c.open(ctx)
	if errors.Is(err, ErrConfig) {
		fmt.Fprintf(c.stderr, "relay outbox: %v\n", err)
		return exitUsage
	} else if err != nil {
		return c.fail(sub, err)
	}
	defer closeFn()
	c.store, c.op, c.audit = deps.Store, deps.Operator, deps.Audit
	return fn(ctx)
}

func (c *opCLI) flags(sub string) *flag.FlagSet {
	fs := flag.NewFlagSet("relay outbox "+sub, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	return fs
}

func (c *opCLI) who(fs *flag.FlagSet) (operator, reason *string) {
	return fs.String("operator", "", "who (required)"), fs.String("reason", "", "why (required)")
}

// textArg refuses an optional free-text argument longer than max bytes or
// holding a control character, before anything is opened: it would reach
// SQL text and the database's log. The value itself is not echoed.
func (c *opCLI) textArg(sub, name, v string, max int) bool {
	if len(v) > max {
		fmt.Fprintf(c.stderr, "relay outbox %s: --%s is refused: longer than %d bytes (nothing changed)\n", sub, name, max)
		return false
	}
	if err := outbox.CheckAuditText(name, v); err != nil {
		fmt.Fprintf(c.stderr, "relay outbox %s: --%s is refused: %v (nothing changed)\n", sub, name, err)
		return false
	}
	return true
}

func (c *opCLI) needWho(sub, operator, reason string) bool {
	if strings.TrimSpace(operator) == "" || strings.TrimSpace(reason) == "" {
		fmt.Fprintf(c.stderr, "relay outbox %s: --operator and --reason are required for changes; they are written to the audit trail\n", sub)
		return false
	}
	for _, f := range [...][2]string{{"operator", operator}, {"reason", reason}} {
		if err := outbox.CheckAuditText(f[0], f[1]); err != nil {
			fmt.Fprintf(c.stderr, "relay outbox %s: --%s is refused: %v (nothing changed)\n", sub, f[0], err)
			return false
		}
	}
	return true
}

func (c *opCLI) fail(sub string, err error) int {
	fmt.Fprintf(c.stderr, "relay outbox %s: %v\n", sub, err)
	return exitError
}

func (c *opCLI) printJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return exitError
	}
	return exitOK
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func parseStatus(s string) (outbox.Status, bool) {
	for _, st := range []outbox.Status{outbox.Pending, outbox.Delivering, outbox.Delivered, outbox.Failed} {
		if strings.EqualFold(st.String(), s) {
			return st, true
		}
	}
	return 0, false
}
