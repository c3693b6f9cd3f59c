package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/release"
)

func (c *cli) status(ctx context.Context, db *bun.DB, _ []string) int {
	st, err := release.Status(ctx, db, c.sets)
	if err != nil {
		return c.fail(exitUsage, "status", err)
	}
	c.emit(map[string]any{"command": "status", "migrations": st}, func(w io.Writer) {
		for _, m := range st {
			state := "pending"
			if m.Applied {
				state = "applied"
			}
			fmt.Fprintf(w, "%-8s %s_%s (%s)\n", state, m.Version, m.Name, m.Set)
		}
	})
	return exitOK
}

func (c *cli) check(ctx context.Context, db *bun.DB, opts release.CheckOptions) int {
	r, err := release.CheckWith(ctx, db, c.sets, opts)
	if err != nil {
		return c.fail(exitCheckFailed, "check", err)
	}
	c.emit(map[string]any{"command": "check", "ok": r.OK(), "report": r}, func(w io.Writer) { printReport(w, r) })
	if !r.OK() {
		return exitCheckFailed
	}
	return exitOK
}

func (c *cli) verify(ctx context.Context, db *bun.DB, _ []string) int {
	r, err := release.Verify(ctx, db, c.sets)
	if err != nil {
		return c.fail(exitVerifyFail, "verify", err)
	}
	c.emit(map[string]any{"command": "verify", "ok": r.OK(), "report": r}, func(w io.Writer) { printReport(w, r) })
	if !r.OK() {
		return exitVerifyFail
	}
	return exitOK
}

func (c *cli) up(ctx context.Context, db *bun.DB, opts release.UpOptions) int {
	opts.OnRetry = func(version string, try int, pause time.Duration) {
		c.log.Warn("migration lock timeout, retrying", "migration", version, "try", try, "pause", pause)
	}
	res, err := release.UpWith(ctx, db, c.sets, opts)
	code := exitOK
	switch {
	case err == nil:
	case errors.Is(err, release.ErrLockTimeout):
		code = exitLockTimeout
	case errors.Is(err, release.ErrCheckFailed):
		code = exitCheckFailed
	case errors.Is(err, release.ErrVerifyFailed):
		code = exitVerifyFail
	case res.Check == nil:
		code = exitCheckFailed // could not even check: not safe to proceed
	default:
		code = exitApplyFailed
	}
	out := map[string]any{"command": "up", "ok": err == nil, "exit_code": code, "result": res}
	if err != nil {
		out["error"] = release.SafeError(err).Error()
	}
	c.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "lock acquired after %s\n", res.Waited.Round(time.Millisecond))
		if res.Check != nil {
			printReport(w, res.Check)
		}
		if res.Check != nil && res.Check.OK() {
			switch {
			case len(res.Applied) > 0:
				fmt.Fprintf(w, "applied: %s\n", strings.Join(res.Applied, ", "))
			case res.Failed == nil:
				fmt.Fprintln(w, "applied: nothing to apply")
			}
			if res.Failed != nil {
				fmt.Fprintf(w, "failed: %s (%s, tries=%d)\n", res.Failed.Version, res.Failed.Code, res.Failed.Tries)
			}
		}
		if res.Verify != nil {
			printReport(w, res.Verify)
		}
	})
	if err != nil {
		return c.fail(code, "up", err)
	}
	return exitOK
}

func (c *cli) down(ctx context.Context, db *bun.DB, to string, timeout time.Duration) int {
	if to == "" {
		fmt.Fprintln(c.stderr, "migrate down: --to VERSION is required (0 rolls back everything); see `migrate status`")
		return exitUsage
	}
	res, err := release.Down(ctx, db, c.sets, to, timeout)
	code := exitOK
	switch {
	case err == nil:
	case errors.Is(err, release.ErrUnknownVersion):
		code = exitUsage
	case errors.Is(err, release.ErrLockTimeout):
		code = exitLockTimeout
	case errors.Is(err, release.ErrRefused), errors.Is(err, release.ErrForwardOnly):
		code = exitRefused
	default:
		code = exitApplyFailed
	}
	out := map[string]any{"command": "down", "ok": err == nil, "exit_code": code, "result": res}
	if err != nil {
		out["error"] = release.SafeError(err).Error()
	}
	c.emit(out, func(w io.Writer) {
		switch {
		case len(res.Blocking) > 0:
			fmt.Fprintf(w, "down refused: tables holding rows: %s\n", strings.Join(res.Blocking, ", "))
		case len(res.RolledBack) == 0 && err == nil:
			fmt.Fprintln(w, "rolled back: nothing to roll back")
		case len(res.RolledBack) > 0:
			fmt.Fprintf(w, "rolled back: %s\n", strings.Join(res.RolledBack, ", "))
		}
	})
	if err != nil {
		return c.fail(code, "down", err)
	}
	return exitOK
}

func (c *cli) backfill(ctx context.Context, db *bun.DB, pos []string, size int) int {
	if len(pos) != 1 {
		fmt.Fprintf(c.stderr, "migrate backfill: want exactly one NAME (one of: %s)\n", c.backfillNames())
		return exitUsage
	}
	var bf *release.Backfill
	for i := range c.backfills {
		if c.backfills[i].Name == pos[0] {
			bf = &c.backfills[i]
		}
	}
	if bf == nil {
		fmt.Fprintf(c.stderr, "migrate backfill: unknown backfill %q (one of: %s)\n", pos[0], c.backfillNames())
		return exitUsage
	}
	var steps []release.Progress
	p, err := release.RunBackfill(ctx, db, *bf, size, func(p release.Progress) {
		steps = append(steps, p)
		if !c.json {
			fmt.Fprintf(c.stdout, "backfill %s: batch %d cursor=%s rows_done=%d\n", p.Name, p.Batches, p.Cursor, p.RowsDone)
		}
	})
	if c.json {
		out := map[string]any{"command": "backfill", "ok": err == nil, "progress": p, "batches": steps}
		if err != nil {
			out["error"] = release.SafeError(err).Error()
		}
		c.emit(out, nil)
	} else if err == nil {
		fmt.Fprintf(c.stdout, "backfill %s: finished, rows_done=%d\n", p.Name, p.RowsDone)
	}
	if err != nil {
		return c.fail(exitApplyFailed, "backfill", err)
	}
	return exitOK
}

func printReport(w io.Writer, r *release.Report) {
	state := "OK"
	if !r.OK() {
		state = "FAILED"
	}
	warnings := len(r.Findings) - r.Violations()
	fmt.Fprintf(w, "%s: %s (server %d, %d applied, %d pending, %d violations, %d warnings)\n",
		r.Phase, state, r.ServerVersion, len(r.Applied), len(r.Pending), r.Violations(), warnings)
	for _, f := range r.Findings {
		fmt.Fprintf(w, "  %-9s %s %s count=%d: %s\n", strings.ToUpper(string(f.Severity)), f.Code, f.Object, f.Count, f.Message)
	}
}
