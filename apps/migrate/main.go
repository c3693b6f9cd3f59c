// Command migrate is the release step for a July service: it reports
// migration status, runs the pre-flight check, applies migrations under an
// advisory lock with post-flight verification, rolls structure back when no
// data is at stake, and runs resumable backfills. Run `migrate -h`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
