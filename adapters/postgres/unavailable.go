package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/ports"
)

// IsUnavailable reports whether err, from any statement on a pool Open
// returned (a store's, or business code's own transaction), means Postgres
// was unreachable or the connection broke, rather than that the statement
// was refused. The app's error handler asks it once for every request, so
// no domain has to translate driver errors to render a 503.
func IsUnavailable(err error) bool { return pgerr.Unavailable(err) }

// classifyDial wraps pgx's dialer so that every failure to reach Postgres
// or of an open connection wraps ports.ErrUnavailable. It is the one place
// connection failures are classified: every statement of every pool Open
// returns passes through it, including business code's own db.RunInTx, so
// a domain that returns a raw error still renders as 503
// DEPENDENCY_UNAVAILABLE, never as 500. Timeouts keep their type (pgx
// turns them into the context's error).
func classifyDial(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, unavailable(err)
		}
		return classifiedConn{c}, nil
	}
}

// classifiedConn marks read and write failures of a connection as
// ports.ErrUnavailable: the connection broke, the statement was not refused.
type classifiedConn struct{ net.Conn }

func (c classifiedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	return n, unavailable(err)
}

func (c classifiedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, unavailable(err)
}

func unavailable(err error) error {
	var ne net.Error
	switch {
	case err == nil, errors.Is(err, ports.ErrUnavailable):
		return err
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("%w: %w", ports.ErrUnavailable, err)
}
