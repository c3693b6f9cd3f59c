package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/release"
)

// snapshot prints the schema.json of one set: what each of its migrations
// creates, alters and drops, from a rehearsal that writes nothing.
func (c *cli) snapshot(ctx context.Context, db *bun.DB, pos []string) int {
	var names []string
	for _, s := range c.sets {
		names = append(names, s.Name)
	}
	if len(pos) != 1 {
		fmt.Fprintf(c.stderr, "migrate snapshot: want exactly one SET (one of: %s)\n", strings.Join(names, ", "))
		return exitUsage
	}
	snaps, err := release.TakeSnapshot(ctx, db, c.sets)
	if err != nil {
		return c.fail(exitCheckFailed, "snapshot", err)
	}
	snap, ok := snaps[pos[0]]
	if !ok {
		fmt.Fprintf(c.stderr, "migrate snapshot: unknown set %q (one of: %s)\n", pos[0], strings.Join(names, ", "))
		return exitUsage
	}
	b, err := snap.Encode()
	if err != nil {
		return c.fail(exitUsage, "snapshot", err)
	}
	_, _ = c.stdout.Write(b)
	return exitOK
}
