package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/outbox"
)

func appendFlags(fs *flag.FlagSet) func(context.Context, common, io.Writer) error {
	n := fs.Int("n", 5000, "transactions per measurement")
	workers := fs.String("workers", "1,8", "concurrent writer counts to try")
	wakes := fs.String("wake", "after-commit", "how Append's pool wakes the relay: after-commit (the default: a NOTIFY after the commit, postgres.Open), in-tx (the insert trigger's NOTIFY inside the transaction, postgres.Config.NotifyInTx), none (a diagnostic: outbox.notify = off and no hook, the relay only polls), comma-separated")
	return func(ctx context.Context, c common, out io.Writer) error {
		ws, err := parseInts(*workers, "workers")
		if err != nil {
			return err
		}
		var modes []string
		for w := range strings.SplitSeq(*wakes, ",") {
			switch w = strings.TrimSpace(w); w {
			case "after-commit", "in-tx", "none":
				modes = append(modes, w)
			default:
				return fmt.Errorf("-wake %q: want after-commit, in-tx or none, comma-separated", *wakes)
			}
		}
		return appendBench(ctx, c, out, *n, ws, modes)
	}
}

// plainTableSQL has tb_outbox_event's width with only a primary key and a
// unique event_id: no partial indexes, no lookup indexes, no NOTIFY trigger.
const plainTableSQL = `CREATE TABLE tb_bench_plain (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event_id uuid NOT NULL UNIQUE,
	event_type varchar(100) NOT NULL, payload_version int NOT NULL,
	aggregate_type varchar(64) NOT NULL, aggregate_id varchar(128) NOT NULL,
	resource_type varchar(64) NOT NULL, resource_id varchar(128) NOT NULL,
	business_key varchar(256), request_id varchar(128) NOT NULL, correlation_id varchar(128) NOT NULL,
	payload jsonb NOT NULL, status smallint NOT NULL, retry_count int NOT NULL,
	next_attempt_at timestamptz NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`

const plainInsertSQL = `INSERT INTO tb_bench_plain (event_id, event_type, payload_version,
	aggregate_type, aggregate_id, resource_type, resource_id, business_key, request_id, correlation_id,
	payload, status, retry_count, next_attempt_at, created_at, updated_at)
	VALUES (?::uuid, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?::jsonb, 1, 0, ?, ?, ?)`

func plainInsert(ctx context.Context, tx bun.IDB, ev outbox.Event) error {
	_, err := tx.ExecContext(ctx, plainInsertSQL, ev.EventID, ev.EventType, ev.PayloadVersion,
		ev.AggregateType, ev.AggregateID, ev.ResourceType, ev.ResourceID, ev.BusinessKey, ev.RequestID,
		ev.CorrelationID, string(ev.Payload), ev.NextAttemptAt, ev.CreatedAt, ev.UpdatedAt)
	return err
}

func appendOne(ctx context.Context, tx bun.IDB, ev outbox.Event) error {
	return pgoutbox.Append(ctx, tx, ev)
}

func appendBench(ctx context.Context, c common, out io.Writer, n int, workers []int, modes []string) error {
	e, err := newEnv(ctx, c)
	if err != nil {
		return err
	}
	defer e.Close()
	pools := map[string]*bun.DB{}
	for _, mode := range modes {
		cfg := postgres.Config{MaxOpenConns: slices.Max(workers), NotifyInTx: mode == "in-tx"}
		if mode == "none" {
			cfg.RuntimeParams = map[string]string{"outbox.notify": "off"} // set by hand: no hook, and the trigger skips its NOTIFY
		}
		db, err := e.openWith(ctx, cfg)
		if err != nil {
			return err
		}
		defer db.Close()
		pools[mode] = db
	}
	if _, err := pools[modes[0]].ExecContext(ctx, plainTableSQL); err != nil {
		return fmt.Errorf("create plain table: %w", err)
	}

	type key struct {
		w     int
		mode  string
		plain bool
	}
	type wkey struct {
		w    int
		mode string
	}
	rates := map[key][]float64{}
	ratios := map[wkey][]float64{}
	for run := range c.runs {
		for _, w := range workers {
			for _, mode := range modes {
				db := pools[mode]
				got := map[bool]float64{}
				// Alternate which goes first so warm caches favour neither.
				order := []bool{run%2 == 0, run%2 != 0}
				for _, plain := range order {
					if err := resetAppend(ctx, db); err != nil {
						return err
					}
					insert := appendOne
					if plain {
						insert = plainInsert
					}
					rate, err := txRate(ctx, db, n, w, insert)
					if err != nil {
						return fmt.Errorf("append run %d workers=%d wake=%s plain=%t: %w", run+1, w, mode, plain, err)
					}
					got[plain] = rate
					rates[key{w, mode, plain}] = append(rates[key{w, mode, plain}], rate)
				}
				ratios[wkey{w, mode}] = append(ratios[wkey{w, mode}], got[false]/got[true])
				fmt.Fprintf(slogWriter, "append run %d workers=%d wake=%s: outbox %.0f tx/s, plain %.0f tx/s\n", run+1, w, mode, got[false], got[true])
			}
		}
	}

	fmt.Fprintf(out, "### append: one event per business transaction, %d transactions per run, median of %d runs\n\n", n, c.runs)
	fmt.Fprintln(out, "| writers | wake-up | Append tx/s | plain INSERT tx/s | ratio | ratio per run | target |")
	fmt.Fprintln(out, "|---:|---|---:|---:|---:|---|---|")
	for _, w := range workers {
		for _, mode := range modes {
			r := median(ratios[wkey{w, mode}])
			fmt.Fprintf(out, "| %d | %s | %.0f | %.0f | %.2f | %s | ≥ 0.90: %s |\n", w, mode, median(rates[key{w, mode, false}]),
				median(rates[key{w, mode, true}]), r, joinFloats(ratios[wkey{w, mode}], "%.2f"), verdict(r >= 0.9))
		}
	}
	fmt.Fprintln(out)
	return nil
}

func resetAppend(ctx context.Context, db *bun.DB) error {
	_, err := db.ExecContext(ctx, "TRUNCATE tb_outbox_event, tb_bench_plain")
	if err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	_, err = db.ExecContext(ctx, "CHECKPOINT")
	return err
}

// txRate commits n transactions, each inserting one fresh event, from w
// writers and returns transactions per second.
func txRate(ctx context.Context, db *bun.DB, n, w int, insert func(context.Context, bun.IDB, outbox.Event) error) (float64, error) {
	evs, err := newEvents(n, time.Now())
	if err != nil {
		return 0, err
	}
	var (
		next     atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range w {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
					return insert(ctx, tx, evs[i])
				})
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
