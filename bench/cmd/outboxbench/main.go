// Command outboxbench measures the outbox pipeline on a real Postgres and
// Redis: how fast the relay drains a backlog (drain), how long a committed
// event waits before it is in the queue (latency), and what pgoutbox.Append
// costs a business transaction (append). Each subcommand creates a scratch
// database and a scratch asynq queue, removes both when it ends, and prints
// a Markdown table for bench/performance.md. retention compares the
// template's batched DELETE with dropping hourly partitions
// (docs/scaling.md).
//
//	go run ./bench/cmd/outboxbench drain
//	go run ./bench/cmd/outboxbench latency -duration 10s
//	go run ./bench/cmd/outboxbench append -cpuprofile append.pprof
//	go run ./bench/cmd/outboxbench retention -runs 1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// subcommand is one benchmark: it registers its flags, then runs.
type subcommand struct {
	name  string
	about string
	flags func(fs *flag.FlagSet) func(ctx context.Context, c common, out io.Writer) error
}

var subcommands = []subcommand{
	{"drain", "delivered events/s draining a pre-filled table", drainFlags},
	{"latency", "commit-to-enqueue latency at a steady offered load", latencyFlags},
	{"append", "pgoutbox.Append in a business tx vs a plain single-row INSERT", appendFlags},
	{"retention", "batched DELETE retention vs hourly partitions detached and dropped", retentionFlags},
	{"consume", "what consumption evidence costs the worker: drain rate and enqueue-to-consumed latency, off vs on", consumeFlags},
	{"reconcile", "what one reconciliation pass costs over a table of delivered events", reconcileFlags},
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "outboxbench:", err)
		}
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		usage(os.Stderr)
		return flag.ErrHelp
	}
	for _, sc := range subcommands {
		if sc.name != args[0] {
			continue
		}
		fs := flag.NewFlagSet(sc.name, flag.ContinueOnError)
		var c common
		c.register(fs)
		runFunc := sc.flags(fs)
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if c.cpuprofile != "" {
			f, err := os.Create(c.cpuprofile)
			if err != nil {
				return fmt.Errorf("create cpu profile: %w", err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return fmt.Errorf("start cpu profile: %w", err)
			}
			defer pprof.StopCPUProfile()
		}
		return runFunc(ctx, c, out)
	}
	usage(os.Stderr)
	return fmt.Errorf("unknown subcommand %q; use one of drain, latency, append, retention, consume, reconcile", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: outboxbench <subcommand> [flags]   (outboxbench <subcommand> -h lists the flags)")
	fmt.Fprintln(w)
	for _, sc := range subcommands {
		fmt.Fprintf(w, "  %-8s %s\n", sc.name, sc.about)
	}
}

// slogWriter receives progress lines and relay warnings, keeping stdout
// for the tables.
var slogWriter io.Writer = os.Stderr
