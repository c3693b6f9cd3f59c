package postgres

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/wakemark"
)

// The outbox wake-up after commit.
//
// The insert trigger's NOTIFY runs inside the appending transaction, and
// Postgres holds its database-wide notify lock from the NOTIFY's
// pre-commit step through the commit's WAL flush: concurrent appending
// transactions then commit one at a time and lose group commit (half the
// throughput at 8 writers, see docs/performance.md). A pool that Open
// returns therefore sends the wake-up itself, after the commit, and
// pgoutbox.Append turns the trigger's NOTIFY off for each of the pool's
// transactions it appends in (set_config('outbox.notify', 'off', true):
// that transaction only, so nothing is left on a session a pooler in
// transaction mode lends to others):
//
//   - a query hook marks every transaction the pool begins
//     (internal/wakemark; Append reads the mark from the transaction's
//     context), notes that it inserted into tb_outbox_event
//     (pgoutbox.Append or any INSERT whose text names the table), and
//     wakes once the COMMIT succeeded; an insert outside a transaction
//     wakes at once; a rolled-back transaction does not wake;
//   - one NOTIFY at a time per pool, on a connection of its own (not one
//     of the pool's: the writers it wakes for may hold them all): wakes
//     requested while one is in flight collapse into the next one, so a
//     busy writer sends about one NOTIFY per round trip, not one per
//     transaction. The NOTIFY's transaction commits asynchronously
//     (set_config('synchronous_commit', 'off', true) in the same
//     statement: a NOTIFY writes no data), so it waits for no WAL flush
//     of its own.
//     It is opened on the first wake-up and closed after wakeIdle without
//     one, with the goroutine that sends.
//
// A lost or late wake-up only costs latency: the relay also polls
// (RELAY_POLL_INTERVAL). Sessions outside this pool (psql, other services),
// and inserts other than Append's, keep the trigger's in-transaction
// NOTIFY.

const notifySQL = "SELECT set_config('synchronous_commit', 'off', true), pg_notify('" + OutboxChannel + "', '')"

const (
	// wakeTimeout bounds connecting and one NOTIFY; past it the relay's
	// poll covers the wake-up.
	wakeTimeout = 5 * time.Second
	// wakeIdle is how long the NOTIFY connection stays open without a
	// wake-up.
	wakeIdle = 2 * time.Second
)

// notifier sends one NOTIFY; Close ends it.
type notifier interface {
	Notify(ctx context.Context) error
	Close()
}

// waker sends coalesced wake-ups through notifiers from dial.
type waker struct {
	dial    func(ctx context.Context) (notifier, error)
	kick    chan struct{} // one buffered wake-up request
	running atomic.Bool
}

func newWaker(cfg *pgx.ConnConfig) *waker {
	cfg = cfg.Copy()
	cfg.RuntimeParams["application_name"] = "outbox-wake"
	return &waker{kick: make(chan struct{}, 1), dial: func(ctx context.Context) (notifier, error) {
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return pgxNotifier{c}, nil
	}}
}

type pgxNotifier struct{ c *pgx.Conn }

func (n pgxNotifier) Notify(ctx context.Context) error {
	_, err := n.c.Exec(ctx, notifySQL)
	return err
}

func (n pgxNotifier) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = n.c.Close(ctx)
}

// wake asks for one NOTIFY after every outbox write committed so far. It
// never blocks.
func (w *waker) wake() {
	select {
	case w.kick <- struct{}{}:
	default: // one is pending already; it covers this commit too
	}
	if w.running.CompareAndSwap(false, true) {
		go w.run()
	}
}

func (w *waker) run() {
	var n notifier
	defer func() {
		if n != nil {
			n.Close()
		}
	}()
	idle := time.NewTimer(wakeIdle)
	defer idle.Stop()
	for {
		select {
		case <-w.kick:
		case <-idle.C:
			w.running.Store(false)
			// A wake between the timer and the Store found running still
			// set and started nothing: take it over.
			if len(w.kick) == 0 || !w.running.CompareAndSwap(false, true) {
				return
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), wakeTimeout)
		var err error
		if n == nil {
			n, err = w.dial(ctx)
		}
		if err == nil {
			err = n.Notify(ctx)
		}
		cancel()
		// An error (database down, connection lost) is not reported: the
		// relay's poll delivers the events, and the business transaction
		// has committed already. The next wake-up reconnects.
		if err != nil && n != nil {
			n.Close()
			n = nil
		}
		idle.Reset(wakeIdle)
	}
}

// wakeHook is the query hook behind the post-commit wake-up; w is a
// *waker.
type wakeHook struct{ w interface{ wake() } }

func (h wakeHook) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	if ev.Query == "BEGIN" {
		// bun keeps the context BEGIN's hooks return as the
		// transaction's, and hands it to COMMIT's and to RunInTx's
		// function, so the mark travels with the transaction.
		ctx, _ = wakemark.With(ctx)
	}
	return ctx
}

func (h wakeHook) AfterQuery(ctx context.Context, ev *bun.QueryEvent) {
	tx := wakemark.From(ctx)
	switch ev.Query {
	case "BEGIN":
		return
	case "COMMIT":
		if tx != nil && tx.State.Swap(wakemark.Ended) == wakemark.Appended && ev.Err == nil {
			h.w.wake()
		}
		return
	case "ROLLBACK":
		if tx != nil {
			tx.State.Store(wakemark.Ended)
		}
		return
	}
	if ev.Err != nil || !isOutboxInsert(ev) {
		return
	}
	// No mark, or the mark of a transaction already over (its context
	// reused afterwards): the insert committed on its own. A transaction
	// begun outside bun's hooks looks the same and gets an early wake-up;
	// its events then wait for the next poll.
	if tx == nil || (!tx.State.CompareAndSwap(wakemark.Open, wakemark.Appended) && tx.State.Load() == wakemark.Ended) {
		h.w.wake()
	}
}

// isOutboxInsert reports whether ev is an INSERT into tb_outbox_event.
func isOutboxInsert(ev *bun.QueryEvent) bool {
	q := strings.TrimLeft(ev.Query, " \t\r\n")
	if len(q) < 6 || !strings.EqualFold(q[:6], "INSERT") {
		return false
	}
	return strings.Contains(q[:min(len(q), 64)], "tb_outbox_event")
}

// wakesAfterCommit reports whether Open should install the post-commit
// wake-up: not when the caller chose the trigger's in-transaction NOTIFY
// (Config.NotifyInTx) or set outbox.notify itself, in the URL or in
// RuntimeParams (a direct connection only: a pooler in transaction mode
// refuses startup parameters).
func (c Config) wakesAfterCommit() bool {
	if c.NotifyInTx || strings.Contains(c.URL, "outbox.notify") {
		return false
	}
	_, set := c.RuntimeParams["outbox.notify"]
	return !set
}
