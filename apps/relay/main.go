// Command relay moves committed outbox events into Asynq and hosts the Asynq
// worker for the service's consumers. Several replicas may run at once:
// rows are leased, so each event is claimed by one relay at a time.
//
//	relay                 run the relay and the worker (default)
//	relay outbox ...      operator commands: list, show, replay, release-leases
//
// Run `relay -h` for the environment it reads.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/july/template/internal/appkit"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() { appkit.Main(run) }

var usage = `relay: moves committed outbox events into Asynq and runs the Asynq worker.

Usage:
  relay [serve]                      run relay loops, recovery sweep, worker and admin server
  relay outbox list [flags]          list events (--status, --type, --correlation-id, --limit, --json)
  relay outbox show EVENT_ID         show one event (never its payload unless --payload)
  relay outbox replay --event-id ID [--event-id ID ...] --operator WHO --reason WHY [--batch-id B]
                                     (with REDIS_URL set, deletes the retained Asynq task so the consumer runs again)
  relay outbox release-leases [--owner OWNER] --operator WHO --reason WHY

Environment:
` + envHelp

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		cfg, err := loadConfig(getenv)
		if err != nil {
			fmt.Fprintf(stderr, "relay: configuration: %v\n", err)
			return exitUsage
		}
		if err := serve(ctx, cfg, stdout); err != nil {
			fmt.Fprintf(stderr, "relay: %v\n", err)
			return exitError
		}
		return exitOK
	case "outbox":
		return outboxCommand(ctx, args, getenv, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "relay: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
}
