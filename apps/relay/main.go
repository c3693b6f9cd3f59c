// Command relay moves committed outbox events into Asynq and hosts the Asynq
// worker for the service's consumers. Several replicas may run at once:
// rows are leased, so each event is claimed by one relay at a time.
//
//	relay                 run the relay and the worker (default)
//	relay outbox ...      operator commands: list, show, replay, release-leases, consumer-failures
//	relay audit list      the audit records kept for the audit team
//
// Run `relay -h` for the environment it reads.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/july/template/adapters/cli/outboxcmd"
	"github.com/july/template/apps/domain"
	"github.com/july/template/internal/appkit"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() { appkit.Main(run) }

const usageHead = `relay: moves committed outbox events into Asynq and runs the Asynq worker.

Usage:
  relay [serve]                      run relay loops, recovery sweep, worker and admin server
  relay --version                    print the module version and VCS revision
` + outboxcmd.Usage + outboxcmd.AuditUsage + `
Environment:
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return runDomains(ctx, appDomains, args, getenv, stdout, stderr)
}

// runDomains is run with the domains ds (appDomains; the tests' own).
func runDomains(ctx context.Context, ds []domain.Domain, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	usage := usageHead + envHelp + domain.EnvHelp(ds, domain.SideRelay)
	if appkit.IsVersionFlag(args) {
		appkit.PrintVersion(stdout, "relay")
		return exitOK
	}
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
		cfg, err := loadConfigOf(ds, getenv)
		if err != nil {
			appkit.LogStartFailure(stderr, "relay: configuration invalid", err, "")
			return exitUsage
		}
		if err := serve(ctx, cfg, stdout); err != nil {
			msg := "relay: exited with an error"
			if errors.Is(err, appkit.ErrNotStarted) {
				msg = "relay: did not start"
			}
			appkit.LogStartFailure(stderr, msg, err, "ADMIN_ADDR")
			return exitError
		}
		return exitOK
	case "outbox":
		return outboxcmd.Run(ctx, args, openOperator(getenv), usage, stdout, stderr)
	case "audit":
		return outboxcmd.RunAudit(ctx, args, openOperator(getenv), usage, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "relay: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
}
