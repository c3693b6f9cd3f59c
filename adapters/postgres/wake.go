package postgres

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// The outbox wake-up after commit.
//
// The insert trigger's NOTIFY runs inside the appending transaction, and
// Postgres holds its database-wide notify lock from the NOTIFY's
// pre-commit step through the commit's WAL flush: concurrent appending
// transactions then commit one at a time and lose group commit (half the
// throughput at 8 writers, see docs/performance.md). A pool that Open
// returns therefore turns the trigger off for its sessions
// (outbox.notify = off) and sends the wake-up itself, after the commit:
//
//   - a query hook notes, per transaction, that it inserted into
//     tb_outbox_event (pgoutbox.Append or any INSERT whose text names the
//     table), and wakes once the COMMIT succeeded; an insert outside a
//     transaction wakes at once; a rolled-back transaction does not wake;
//   - one NOTIFY at a time per pool, from a short-lived goroutine: wakes
//     requested while one is in flight collapse into the next one, so a
//     busy writer sends about one NOTIFY per notify round trip, not one
//     per transaction. The NOTIFY commits asynchronously (it writes no
//     data), so it does not wait for a WAL flush of its own.
//
// A lost or late wake-up only costs latency: the relay also polls
// (RELAY_POLL_INTERVAL). Sessions outside this pool (psql, other services)
// keep the trigger's in-transaction NOTIFY.

// notifySQL is one simple-protocol query (pgx sends a query without
// arguments that way in every exec mode), so SET LOCAL and the NOTIFY
// share one implicit transaction and one round trip.
const notifySQL = "SET LOCAL synchronous_commit = off; SELECT pg_notify('" + OutboxChannel + "', '')"

// wakeTimeout bounds one NOTIFY; on timeout the relay's poll covers it.
const wakeTimeout = 5 * time.Second

// waker sends coalesced wake-ups on db.
type waker struct {
	send    func(context.Context) error
	pending atomic.Bool
	running atomic.Bool
}

func newWaker(db *bun.DB) *waker {
	return &waker{send: func(ctx context.Context) error {
		_, err := db.ExecContext(ctx, notifySQL)
		return err
	}}
}

// wake asks for one NOTIFY after every outbox write committed so far. It
// never blocks: the NOTIFY goes out from a goroutine that lives while
// wake-ups keep coming.
func (w *waker) wake() {
	w.pending.Store(true)
	if w.running.CompareAndSwap(false, true) {
		go w.run()
	}
}

func (w *waker) run() {
	for {
		for w.pending.Swap(false) {
			ctx, cancel := context.WithTimeout(context.Background(), wakeTimeout)
			// An error (pool closed, database down) is not reported: the
			// relay's poll delivers the events, and the business
			// transaction has committed already.
			_ = w.send(ctx)
			cancel()
		}
		w.running.Store(false)
		// A wake between the last Swap and the Store above found running
		// still set and started nothing: take it over.
		if !w.pending.Load() || !w.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// Transaction states of an outboxTx mark.
const (
	txOpen     int32 = iota // no outbox write yet
	txAppended              // wrote to the outbox; wake on commit
	txEnded                 // committed or rolled back
)

type outboxTx struct{ state atomic.Int32 }

type outboxTxKey struct{}

// wakeHook is the query hook behind the post-commit wake-up; w is a
// *waker.
type wakeHook struct{ w interface{ wake() } }

func (h wakeHook) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	if ev.Query == "BEGIN" {
		// bun keeps the context BEGIN's hooks return as the
		// transaction's, and hands it to COMMIT's and to RunInTx's
		// function, so the mark travels with the transaction.
		return context.WithValue(ctx, outboxTxKey{}, &outboxTx{})
	}
	return ctx
}

func (h wakeHook) AfterQuery(ctx context.Context, ev *bun.QueryEvent) {
	tx, _ := ctx.Value(outboxTxKey{}).(*outboxTx)
	switch ev.Query {
	case "BEGIN":
		return
	case "COMMIT":
		if tx != nil && tx.state.Swap(txEnded) == txAppended && ev.Err == nil {
			h.w.wake()
		}
		return
	case "ROLLBACK":
		if tx != nil {
			tx.state.Store(txEnded)
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
	if tx == nil || (!tx.state.CompareAndSwap(txOpen, txAppended) && tx.state.Load() == txEnded) {
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
// RuntimeParams.
func (c Config) wakesAfterCommit() bool {
	if c.NotifyInTx || strings.Contains(c.URL, "outbox.notify") {
		return false
	}
	_, set := c.RuntimeParams["outbox.notify"]
	return !set
}
