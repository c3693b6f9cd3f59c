package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
)

// IsDirect reports whether db's connections reach Postgres itself rather
// than a connection pooler. A pooler (PgBouncer in any mode, and the
// proxies that share server connections among clients) answers a
// connection's start with a process id of its own, so the id the
// connection was given differs from the server's pg_backend_pid(); a
// direct connection, or a plain TCP proxy, reports the same id. What
// needs a session (a session-level advisory lock, LISTEN) must not run
// where IsDirect is false: in transaction mode the session belongs to
// whichever client the pooler lends it to next.
func IsDirect(ctx context.Context, db *bun.DB) (bool, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("take a connection: %w", err)
	}
	defer conn.Close()
	var direct bool
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("not a pgx connection")
		}
		var backend uint32
		if err := c.Conn().QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
			return err
		}
		direct = backend == c.Conn().PgConn().PID()
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("compare the connection's process id with the server's: %w", err)
	}
	return direct, nil
}
