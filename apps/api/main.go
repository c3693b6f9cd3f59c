// Command api serves the service's HTTP API: health, readiness and the
// system-config admin endpoints (tb_system_config) on HTTP_ADDR, with the
// request id, error envelope, bearer auth and redacting access log of
// adapters/http, and Prometheus metrics (with health and readiness) on
// ADMIN_ADDR.
//
//	api [serve]                               run the HTTP server (default)
//	api token --sub S --roles a,b [--ttl 1h]  print a dev bearer token
//
// Run `api -h` for the environment it reads.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/july/template/apps/domain"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/internal/appkit"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() { appkit.Main(run) }

const usageHead = `api: the service's HTTP API (health, system-config admin; metrics on ADMIN_ADDR).

Usage:
  api [serve]                                 run the HTTP server until SIGINT/SIGTERM
  api token --sub SUBJECT --roles a,b [--ttl 1h]
                                              print a development bearer token signed
                                              with AUTH_JWT_SECRET (e.g. --roles super_admin)

  api --version                               print the module version and VCS revision

Endpoints on HTTP_ADDR (the template's; every one, including the domains'
routes, is in the HTTP contract docs/openapi.yaml, served by the running API
at GET /openapi.yaml):
  GET /healthz (alive), GET /readyz (Postgres; Redis down: 200 "degraded")
  GET /openapi.yaml
  GET /api/v1/system-configs?module=, GET|PUT /api/v1/system-configs/{key}
On ADMIN_ADDR (for Prometheus and the orchestrator, never the public):
  GET /metrics, GET /healthz, GET /readyz

Environment:
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return runDomains(ctx, domains.All(), args, getenv, stdout, stderr)
}

// runDomains is run with the domains ds (apps/internal/domains.All, read
// at run, not at package init: tests Include domains from init).
func runDomains(ctx context.Context, ds []domain.Domain, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	usage := usageHead + envHelp + domain.EnvHelp(ds, domain.SideAPI)
	if appkit.IsVersionFlag(args) {
		appkit.PrintVersion(stdout, "api")
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
		if len(args) > 0 {
			fmt.Fprintf(stderr, "api: serve takes no arguments, got %q\n\n%s", args, usage)
			return exitUsage
		}
		cfg, err := loadConfigOf(ds, getenv)
		if err != nil {
			appkit.LogStartFailure(stderr, "api: configuration invalid", err, "")
			return exitUsage
		}
		if err := serve(ctx, cfg, stdout); err != nil {
			msg := "api: exited with an error"
			if errors.Is(err, appkit.ErrNotStarted) {
				msg = "api: did not start"
			}
			appkit.LogStartFailure(stderr, msg, err, addrVar(cfg, err))
			return exitError
		}
		return exitOK
	case "token":
		return tokenCommand(args, getenv, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "api: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
}

// addrVar names the variable of the listener a start failure is about:
// ADMIN_ADDR when the error names its address, else HTTP_ADDR.
func addrVar(cfg config, err error) string {
	if strings.Contains(err.Error(), "listen tcp "+cfg.AdminAddr+":") {
		return "ADMIN_ADDR"
	}
	return "HTTP_ADDR"
}
