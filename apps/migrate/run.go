package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/adapters/tracing"
	"github.com/july/template/internal/appkit"
	"github.com/july/template/internal/envconf"
)

// Exit codes; documented in usage and docs/release-runbook.md.
const (
	exitOK          = 0
	exitUsage       = 1
	exitCheckFailed = 2
	exitApplyFailed = 3
	exitVerifyFail  = 4
	exitLockTimeout = 5
	exitRefused     = 6
)

const usage = `migrate: release-step migrations for a July service.

Usage:
  migrate <command> [flags]
  migrate --version      print the module version and VCS revision

Commands:
  status                 list applied and pending migrations
  check                  pre-flight check; writes nothing (READ ONLY transaction)
  up                     lock, check, apply pending migrations (bounded lock and statement timeouts,
                         lock timeouts retried with backoff), verify
  verify                 post-flight verification (smoke test is rolled back)
  down --to VERSION      structure-only rollback to VERSION (0 = all); refuses if data would be lost
  backfill NAME          run a resumable backfill (names: %s)
  snapshot SET           print SET's schema.json (what each migration creates, alters,
                         drops); commit it next to the set's migrations; writes nothing

Run 'migrate <command> -h' for the command's flags. Every command accepts --json.

Environment:
  DATABASE_URL   postgres://user@host:5432/db (required); may be a pooler in transaction
                 mode (PgBouncer): status, check, verify, backfill and snapshot use it
  DATABASE_DIRECT_URL  a direct connection to the same database (default DATABASE_URL);
                 up and down run on it: they hold a session advisory lock and session
                 settings for the whole run, so they refuse (exit 1) a connection that
                 goes through a pooler
  LOG_LEVEL      debug, info (default), warn or error; logs go to stderr
  MIGRATE_STRICT true or false (default false): the default of check's and up's --strict,
                 which turns undelivered outbox rows and unfinished tasks into violations
  OTEL_EXPORTER_OTLP_ENDPOINT  OpenTelemetry collector, OTLP over HTTP; when set, each
                 command is one trace ("migrate up") with its statements as spans
  OTEL_SERVICE_NAME  service.name of the spans (default migrate); the other standard
                 OTEL_* variables apply too

Exit codes:
  0 ok   1 usage or environment   2 check failed   3 apply failed
  4 verify failed   5 lock timeout   6 refused (down with data, or of a forward-only migration)
`

// cli carries what every command needs.
type cli struct {
	getenv    func(string) string
	stdout    io.Writer
	stderr    io.Writer
	log       *slog.Logger
	sets      []release.Set
	backfills []release.Backfill
	json      bool
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return runWith(ctx, args, getenv, stdout, stderr, migrationSets(), backfills())
}

// runWith is run with injectable migration sets and backfills (tests use
// test-only sets).
func runWith(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer,
	sets []release.Set, bfs []release.Backfill,
) int {
	if appkit.IsVersionFlag(args) {
		appkit.PrintVersion(stdout, "migrate")
		return exitOK
	}
	env := envconf.New(getenv)
	level := env.LogLevel("LOG_LEVEL")
	strict := env.Bool("MIGRATE_STRICT", false)
	if err := env.Err(); err != nil {
		fmt.Fprintf(stderr, "migrate: configuration: %v\n", err)
		return exitUsage
	}
	c := &cli{getenv: getenv, stdout: stdout, stderr: stderr, sets: sets, backfills: bfs,
		log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))}
	if len(args) == 0 {
		fmt.Fprintf(stderr, usage, c.backfillNames())
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(stdout, usage, c.backfillNames())
		return exitOK
	case "status":
		return c.cmd(ctx, "status", args[1:], "list applied and pending migrations", nil, c.status)
	case "check":
		opts := release.CheckOptions{}
		return c.cmd(ctx, "check", args[1:], "pre-flight check; exits 2 on any violation and writes nothing",
			func(fs *flag.FlagSet) { fs.BoolVar(&opts.Strict, "strict", strict, strictHelp) },
			func(ctx context.Context, db *bun.DB, _ []string) int { return c.check(ctx, db, opts) })
	case "verify":
		return c.cmd(ctx, "verify", args[1:], "post-flight verification; exits 4 on any violation", nil, c.verify)
	case "up":
		var opts release.UpOptions
		return c.cmd(ctx, "up", args[1:], "take the migration lock, check, apply, verify; exits 2/3/4/5 on failure.\n"+
			"Each migration runs under SET LOCAL lock_timeout (default "+release.DefaultMigrationLockTimeout.String()+
			") and statement_timeout (default "+release.DefaultStatementTimeout.String()+");\n"+
			"a file overrides them with a line -- migrate:lock_timeout=2s or -- migrate:statement_timeout=1h.",
			func(fs *flag.FlagSet) {
				fs.DurationVar(&opts.LockTimeout, "lock-timeout", release.DefaultLockTimeout, "give up (exit 5) if another run holds the migration lock this long")
				fs.IntVar(&opts.LockTries, "lock-tries", release.DefaultLockTries, "tries of a migration whose lock_timeout expired before it fails (exit 3, code lock_timeout)")
				fs.DurationVar(&opts.LockBackoff, "lock-backoff", release.DefaultLockBackoff,
					"pause after a migration's first lock timeout, doubled after each further one (at most "+release.MaxLockBackoff.String()+")")
				fs.BoolVar(&opts.Strict, "strict", strict, strictHelp)
			}, func(ctx context.Context, db *bun.DB, _ []string) int { return c.up(ctx, db, opts) })
	case "down":
		var to string
		var timeout time.Duration
		return c.cmd(ctx, "down", args[1:], "roll structure back to --to VERSION; exits 6 when a table would lose rows",
			func(fs *flag.FlagSet) {
				fs.StringVar(&to, "to", "", "target version, kept applied (0 rolls back everything) (required)")
				fs.DurationVar(&timeout, "lock-timeout", release.DefaultLockTimeout, "give up (exit 5) if another run holds the lock this long")
			}, func(ctx context.Context, db *bun.DB, _ []string) int { return c.down(ctx, db, to, timeout) })
	case "backfill":
		var size int
		return c.cmd(ctx, "backfill", args[1:], "run backfill NAME batch by batch from its checkpoint ("+c.backfillNames()+")",
			func(fs *flag.FlagSet) {
				fs.IntVar(&size, "batch-size", release.DefaultBatchSize, "rows per batch (each batch is one transaction)")
			}, func(ctx context.Context, db *bun.DB, pos []string) int { return c.backfill(ctx, db, pos, size) })
	case "snapshot":
		return c.cmd(ctx, "snapshot", args[1:], "print a set's schema.json from a rehearsal on a scratch schema (writes nothing)", nil, c.snapshot)
	default:
		fmt.Fprintf(stderr, "migrate: unknown command %q\n\n", args[0])
		fmt.Fprintf(stderr, usage, c.backfillNames())
		return exitUsage
	}
}

// strictHelp documents --strict of check and up.
const strictHelp = "strict pre-check: undelivered outbox rows (pending, delivering, expired or long leases) and unfinished tasks are violations (exit 2), " +
	"not warnings; for a release with producers stopped and the relay and workers drained (default: MIGRATE_STRICT, else false)"

// sessionCommands need a session of their own (a session advisory lock,
// session settings on a held connection): they run on DATABASE_DIRECT_URL
// and refuse a pooler.
var sessionCommands = map[string]bool{"up": true, "down": true}

// cmd parses flags (positional arguments may come before or after them),
// opens the database and runs fn.
func (c *cli) cmd(ctx context.Context, name string, args []string, summary string,
	flags func(*flag.FlagSet), fn func(ctx context.Context, db *bun.DB, pos []string) int,
) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.BoolVar(&c.json, "json", false, "print one JSON object instead of text")
	if flags != nil {
		flags(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: migrate %s [flags]\n\n%s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nExit codes: 0 ok, 1 usage, 2 check failed, 3 apply failed, 4 verify failed, 5 lock timeout, 6 refused\n")
	}
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" || a == "--h" {
			fs.SetOutput(c.stdout) // asked-for help goes to stdout
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	url := c.getenv("DATABASE_URL")
	if url == "" {
		fmt.Fprintln(c.stderr, "migrate: DATABASE_URL is not set; export DATABASE_URL=postgres://user@host:5432/db")
		return exitUsage
	}
	env, session := "DATABASE_URL", sessionCommands[name]
	if direct := c.getenv("DATABASE_DIRECT_URL"); session && direct != "" {
		url, env = direct, "DATABASE_DIRECT_URL"
	}
	db, err := postgres.Open(ctx, postgres.Config{URL: url, MaxOpenConns: 4, Env: env})
	if err != nil {
		var oe *postgres.OpenError
		if errors.As(err, &oe) {
			fmt.Fprintf(c.stderr, "migrate: %v.\nFix: %s.\n", oe, oe.Hint)
		} else {
			fmt.Fprintf(c.stderr, "migrate: %v\n", err)
		}
		return exitUsage
	}
	defer db.Close()
	if session {
		direct, err := postgres.IsDirect(ctx, db)
		if err != nil {
			return c.fail(exitUsage, name, err)
		}
		if !direct {
			fmt.Fprintf(c.stderr, "migrate %s: refused: %s reaches Postgres through a connection pooler (the server's process id differs "+
				"from the one the connection was given), and %s holds a session advisory lock and session settings for the whole run, "+
				"which a pooler in transaction mode would leave on a server connection it lends to other clients.\n"+
				"Fix: set DATABASE_DIRECT_URL to a direct connection to Postgres (the pooler's upstream, e.g. "+
				"postgres://user:password@db-host:5432/app); DATABASE_URL may keep pointing at the pooler.\n", name, env, name)
			return exitUsage
		}
	}
	c.log.Debug("connected", "command", name, "env", env)
	tp, err := tracing.New(ctx, tracing.Config{Service: tracing.Service{Name: "migrate"}, Getenv: c.getenv})
	if err != nil {
		fmt.Fprintf(c.stderr, "migrate: %v\n", err)
		return exitUsage
	}
	defer func() { // flush the command's spans, bounded: a release step never hangs on a collector
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(fctx); err != nil {
			c.log.Warn("tracing: spans not flushed", "error", err)
		}
	}()
	ctx, span := tp.Tracer("github.com/july/template/apps/migrate").Start(ctx, "migrate "+name)
	defer span.End()
	code := fn(ctx, db, pos)
	span.SetAttributes(attribute.Int("process.exit.code", code))
	if code != exitOK {
		span.SetStatus(codes.Error, "migrate "+name+" exited "+strconv.Itoa(code))
	}
	return code
}

func (c *cli) backfillNames() string {
	names := make([]string, 0, len(c.backfills))
	for _, b := range c.backfills {
		names = append(names, b.Name)
	}
	return strings.Join(names, ", ")
}

// emit prints v as JSON when --json is set, otherwise calls text.
func (c *cli) emit(v any, text func(w io.Writer)) {
	if c.json {
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		return
	}
	text(c.stdout)
}

// fail reports an error that is not a report (infrastructure, apply).
// Its message passes through release.SafeError: no row values.
func (c *cli) fail(code int, command string, err error) int {
	err = release.SafeError(err)
	c.log.Error("command failed", "command", command, "exit_code", code, "error", err)
	fmt.Fprintf(c.stderr, "migrate %s: %v\n", command, err)
	return code
}
