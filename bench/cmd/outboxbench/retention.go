package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/bench/internal/procstat"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

func retentionFlags(fs *flag.FlagSet) func(context.Context, common, io.Writer) error {
	var p retentionParams
	fs.IntVar(&p.rows, "rows", 1_000_000, "delivered rows loaded, created (and delivered) evenly over -hours")
	fs.IntVar(&p.hours, "hours", 24, "hours the delivered rows span, one partition each in the partition variant")
	fs.IntVar(&p.keep, "keep", 1, "newest hours kept (the retention window); everything delivered before them is removed")
	fs.IntVar(&p.pending, "pending", 1000, "Pending rows in the newest hour: the backlog retention must keep")
	fs.IntVar(&p.failedOld, "failed-old", 0, "Failed rows in the oldest hour: DELETE keeps them and removes the rest, a partition holding one is kept whole")
	fs.IntVar(&p.batch, "batch", 1000, "rows per PurgeDelivered call (apps/relay uses 1000)")
	fs.IntVar(&p.writerRate, "writer-rate", 0, "if above 0, a second pass per variant appends at this many events/s during retention and reports the append latency")
	fs.StringVar(&p.waldump, "waldump", "auto", "pg_waldump binary, to count the WAL of the scratch database alone (auto: the server's, when this host can read its pg_wal; off: only the cluster-wide LSN difference)")
	variants := fs.String("variants", "delete,partition", "delete (the template's PurgeDelivered in batches), partition (hourly partitions on created_at, detach and drop), or both")
	return func(ctx context.Context, c common, out io.Writer) error {
		for v := range strings.SplitSeq(*variants, ",") {
			if v != "delete" && v != "partition" {
				return fmt.Errorf("-variants %q: want delete, partition or both", *variants)
			}
			p.variants = append(p.variants, v)
		}
		if p.keep < 1 || p.keep >= p.hours {
			return fmt.Errorf("-keep %d: want 1..%d (below -hours)", p.keep, p.hours-1)
		}
		if p.rows < p.hours || p.batch < 1 {
			return fmt.Errorf("-rows %d, -batch %d: want at least one row per hour and a batch of 1 or more", p.rows, p.batch)
		}
		return retention(ctx, c, out, p)
	}
}

type retentionParams struct {
	rows, hours, keep, pending, failedOld, batch int
	writerRate                                   int
	waldump                                      string
	variants                                     []string
}

// cost is what one measured phase used.
type cost struct {
	elapsed time.Duration
	pgCPU   time.Duration // this database's backends
	walLSN  int64         // cluster-wide pg_wal_lsn_diff: includes other databases
	walDB   int64         // this database's WAL records (pg_waldump); -1 if not read
	busy    float64       // machine busy share
}

// wal is this database's WAL when pg_waldump read it, else the cluster's.
func (c cost) wal() int64 {
	if c.walDB >= 0 {
		return c.walDB
	}
	return c.walLSN
}

// medianOf is the median of f over rs.
func medianOf(rs []retentionRun, f func(retentionRun) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return median(xs)
}

type retentionRun struct {
	removed, steps, kept           int64
	purge, vacuum                  cost
	sizeBefore, sizeAfter, sizeVac int64
	freeVac                        int64 // heap space VACUUM made reusable; -1 without pg_freespacemap
	p50Before, p99Before, p50, p99 time.Duration
	maxLat                         time.Duration
	appended                       int
	appendRate                     float64
	writerPurgeElapsed             time.Duration
}

func retention(ctx context.Context, c common, out io.Writer, p retentionParams) error {
	if c.runs < 1 {
		return fmt.Errorf("-runs %d: pass 1 or more", c.runs)
	}
	// end is the next full hour, so now (the writer's created_at) falls in
	// the newest kept hour.
	end := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	quiet := map[string][]retentionRun{}
	loaded := map[string][]retentionRun{}
	var walNote string
	for run := range c.runs {
		for _, v := range p.variants {
			for _, writer := range []bool{false, true} {
				if writer && p.writerRate <= 0 {
					continue
				}
				r, note, err := retentionOnce(ctx, c, p, v, end, writer)
				if err != nil {
					return fmt.Errorf("retention run %d variant %s: %w", run+1, v, err)
				}
				walNote = note
				if writer {
					fmt.Fprintf(slogWriter, "retention run %d %s with writer: appended %d at %.0f/s, before p50 %s p99 %s ms, during p50 %s p99 %s max %s ms\n",
						run+1, v, r.appended, r.appendRate, ms(r.p50Before), ms(r.p99Before), ms(r.p50), ms(r.p99), ms(r.maxLat))
					loaded[v] = append(loaded[v], r)
					continue
				}
				fmt.Fprintf(slogWriter, "retention run %d %s: removed %d in %s (%.0f rows/s), pg cpu %s, wal db %s cluster %s, size %s -> %s -> %s after vacuum\n",
					run+1, v, r.removed, r.purge.elapsed.Round(time.Millisecond), float64(r.removed)/r.purge.elapsed.Seconds(), r.purge.pgCPU,
					mib(r.purge.walDB), mib(r.purge.walLSN), mib(r.sizeBefore), mib(r.sizeAfter), mib(r.sizeVac))
				quiet[v] = append(quiet[v], r)
			}
		}
	}

	fmt.Fprintf(out, "### retention: %d delivered rows over %d h plus %d pending, removing what was delivered before the newest %d h, median of %d runs\n\n",
		p.rows, p.hours, p.pending, p.keep, c.runs)
	fmt.Fprintln(out, "| variant | rows removed | batches / partitions dropped | partitions kept | s | rows/s | rows/s per run | PG CPU µs/row | WAL bytes/row | WAL MiB (this db / cluster) | machine busy | MiB before | after | after VACUUM | of it free heap | VACUUM s | VACUUM PG CPU s | VACUUM WAL MiB |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, v := range p.variants {
		rs := quiet[v]
		med := func(f func(r retentionRun) float64) float64 { return medianOf(rs, f) }
		perRun := make([]float64, len(rs))
		for i, r := range rs {
			perRun[i] = float64(r.removed) / r.purge.elapsed.Seconds()
		}
		walRow := func(r retentionRun) float64 { return float64(r.purge.wal()) / float64(max(r.removed, 1)) }
		fmt.Fprintf(out, "| %s | %.0f | %.0f | %.0f | %.1f | %.0f | %s | %.1f | %.0f | %s / %s | %.0f%% | %s | %s | %s | %s | %.1f | %.1f | %s |\n",
			v, med(func(r retentionRun) float64 { return float64(r.removed) }),
			med(func(r retentionRun) float64 { return float64(r.steps) }),
			med(func(r retentionRun) float64 { return float64(r.kept) }),
			med(func(r retentionRun) float64 { return r.purge.elapsed.Seconds() }),
			median(perRun), joinFloats(perRun, "%.0f"),
			med(func(r retentionRun) float64 {
				return float64(r.purge.pgCPU.Microseconds()) / float64(max(r.removed, 1))
			}),
			med(walRow),
			mib(int64(med(func(r retentionRun) float64 { return float64(r.purge.walDB) }))),
			mib(int64(med(func(r retentionRun) float64 { return float64(r.purge.walLSN) }))),
			100*med(func(r retentionRun) float64 { return r.purge.busy }),
			mib(int64(med(func(r retentionRun) float64 { return float64(r.sizeBefore) }))),
			mib(int64(med(func(r retentionRun) float64 { return float64(r.sizeAfter) }))),
			mib(int64(med(func(r retentionRun) float64 { return float64(r.sizeVac) }))),
			mib(int64(med(func(r retentionRun) float64 { return float64(r.freeVac) }))),
			med(func(r retentionRun) float64 { return r.vacuum.elapsed.Seconds() }),
			med(func(r retentionRun) float64 { return r.vacuum.pgCPU.Seconds() }),
			mib(int64(med(func(r retentionRun) float64 { return float64(r.vacuum.wal()) }))))
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, walNote)
	fmt.Fprintln(out)
	if p.writerRate > 0 {
		fmt.Fprintf(out, "#### append latency (pgoutbox.Append, one autocommit INSERT) at %d events/s while retention runs, median of %d runs\n\n", p.writerRate, c.runs)
		fmt.Fprintln(out, "| variant | retention s | appended/s | p50 ms before | p99 ms before | p50 ms during | p99 ms during | max ms during |")
		fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, v := range p.variants {
			rs := loaded[v]
			med := func(f func(r retentionRun) float64) float64 { return medianOf(rs, f) }
			d := func(f func(r retentionRun) time.Duration) string {
				return ms(time.Duration(med(func(r retentionRun) float64 { return float64(f(r)) })))
			}
			fmt.Fprintf(out, "| %s | %.1f | %.0f | %s | %s | %s | %s | %s |\n", v,
				med(func(r retentionRun) float64 { return r.writerPurgeElapsed.Seconds() }),
				med(func(r retentionRun) float64 { return r.appendRate }),
				d(func(r retentionRun) time.Duration { return r.p50Before }), d(func(r retentionRun) time.Duration { return r.p99Before }),
				d(func(r retentionRun) time.Duration { return r.p50 }), d(func(r retentionRun) time.Duration { return r.p99 }),
				d(func(r retentionRun) time.Duration { return r.maxLat }))
		}
		fmt.Fprintln(out)
	}
	return nil
}

// retentionOnce loads a fresh scratch database and removes the old rows
// with one variant. With writer, an appender runs meanwhile and only its
// latency and the elapsed time are meaningful.
func retentionOnce(ctx context.Context, c common, p retentionParams, variant string, end time.Time, writer bool) (retentionRun, string, error) {
	var r retentionRun
	e, err := newEnv(ctx, c)
	if err != nil {
		return r, "", err
	}
	defer e.Close()
	db, err := e.open(ctx, 4)
	if err != nil {
		return r, "", err
	}
	defer db.Close()
	// The sweep's pool: one connection with the relay's session settings.
	rdb, err := e.openRelay(ctx, 1)
	if err != nil {
		return r, "", err
	}
	defer rdb.Close()

	start := end.Add(-time.Duration(p.hours) * time.Hour)
	cutoff := end.Add(-time.Duration(p.keep) * time.Hour)
	var parts []partition
	if variant == "partition" {
		if parts, err = partitionOutbox(ctx, db, start, end.Add(2*time.Hour)); err != nil {
			return r, "", err
		}
	} else if _, err := db.ExecContext(ctx, "ALTER TABLE tb_outbox_event SET (autovacuum_enabled = off)"); err != nil {
		return r, "", fmt.Errorf("turn autovacuum off on the outbox: %w", err)
	}
	t0 := time.Now()
	if err := loadOutbox(ctx, db, p, start, cutoff, end); err != nil {
		return r, "", err
	}
	before, err := countRows(ctx, db)
	if err != nil {
		return r, "", err
	}
	fmt.Fprintf(slogWriter, "retention %s: loaded %d rows in %s\n", variant, before, time.Since(t0).Round(time.Second))
	if r.sizeBefore, err = outboxSize(ctx, db); err != nil {
		return r, "", err
	}
	wm, note := newWALMeter(ctx, db, p.waldump)

	var remove func(ctx context.Context) error
	switch variant {
	case "delete":
		store, err := pgoutbox.NewStore(rdb, relayStoreConfig)
		if err != nil {
			return r, "", err
		}
		job, err := relay.NewRetention(store, ports.ClockFunc(func() time.Time { return end }), relay.RetentionConfig{
			Window: time.Duration(p.keep) * time.Hour, Batch: p.batch, RemovedFunc: func(int) { r.steps++ }, Logger: quietLogger})
		if err != nil {
			return r, "", err
		}
		remove = func(ctx context.Context) error { _, err := job.RunOnce(ctx); return err }
	case "partition":
		remove = func(ctx context.Context) error {
			dropped, kept, err := dropPartitions(ctx, rdb, parts, cutoff)
			r.steps, r.kept = int64(dropped), int64(kept)
			return err
		}
	}
	// Open the sweep's connection now, so the CPU sample sees its backend.
	if _, err := rdb.ExecContext(ctx, "SELECT 1"); err != nil {
		return r, "", fmt.Errorf("open the sweep's connection: %w", err)
	}

	if writer {
		// As in measure: the pages retention touches first cost a full-page image.
		if _, err := db.ExecContext(ctx, "CHECKPOINT"); err != nil {
			return r, "", fmt.Errorf("checkpoint: %w", err)
		}
		w := startWriter(ctx, e, p.writerRate)
		time.Sleep(5 * time.Second)
		w.mark()
		t := time.Now()
		err := remove(ctx)
		r.writerPurgeElapsed = time.Since(t)
		lat, rate, n, werr := w.stop()
		if err != nil {
			return r, "", err
		}
		if werr != nil {
			return r, "", werr
		}
		r.p50Before, r.p99Before = percentile(lat[0], 50), percentile(lat[0], 99)
		r.p50, r.p99, r.maxLat = percentile(lat[1], 50), percentile(lat[1], 99), percentile(lat[1], 100)
		r.appendRate, r.appended = rate, n
		return r, note, nil
	}

	if r.purge, err = wm.measure(ctx, db, remove); err != nil {
		return r, "", err
	}
	after, err := countRows(ctx, db)
	if err != nil {
		return r, "", err
	}
	r.removed = before - after
	if r.sizeAfter, err = outboxSize(ctx, db); err != nil {
		return r, "", err
	}
	// A plain VACUUM makes the deleted rows' space reusable; it does not
	// give it back to the file system. In production autovacuum runs it.
	if r.vacuum, err = wm.measure(ctx, db, func(ctx context.Context) error {
		_, err := rdb.ExecContext(ctx, "VACUUM tb_outbox_event")
		return err
	}); err != nil {
		return r, "", fmt.Errorf("vacuum: %w", err)
	}
	if r.sizeVac, err = outboxSize(ctx, db); err != nil {
		return r, "", err
	}
	r.freeVac = heapFree(ctx, db)
	return r, note, nil
}

// loadOutbox inserts the delivered rows with one INSERT ... SELECT, then the
// pending and failed ones, and refreshes visibility map and statistics as a
// steady table would have them. A delivered row's delivered_at equals its
// created_at, so both variants remove exactly the same rows.
func loadOutbox(ctx context.Context, db *bun.DB, p retentionParams, start, cutoff, end time.Time) error {
	const cols = `INSERT INTO tb_outbox_event (event_id, event_type, payload_version, aggregate_type, aggregate_id,
		resource_type, resource_id, request_id, correlation_id, payload, status, next_attempt_at, created_at, updated_at,
		delivered_at, last_error_code)
	SELECT gen_random_uuid(), 'order.placed', 1, 'order', 'ord-' || g, 'order', 'ord-' || g, 'req-' || g, 'corr-' || g,
		jsonb_build_object('order_id', 'ord-' || g, 'customer_id', 'cus-' || (g % 10000), 'amount_cents', 1299 + g % 100,
			'currency', 'CNY', 'items', 1 + g % 5),
		?, t, t, t, `
	spread := func(from, to time.Time, n int) (float64, float64) {
		return float64(from.UnixMicro()) / 1e6, to.Sub(from).Seconds() / float64(max(n, 1))
	}
	s0, step := spread(start, end, p.rows)
	p0, pstep := spread(cutoff, end, p.pending)
	f0, fstep := spread(start, start.Add(time.Hour), p.failedOld)
	for _, q := range []struct {
		what string
		sql  string
		args []any
	}{
		{"delivered", cols + `t, NULL FROM generate_series(1, ?) g, LATERAL (SELECT to_timestamp(?::float8 + (g - 1) * ?::float8)) s(t)`,
			[]any{3, p.rows, s0, step}},
		{"pending", cols + `NULL, NULL FROM generate_series(1, ?) g, LATERAL (SELECT to_timestamp(?::float8 + (g - 1) * ?::float8)) s(t)`,
			[]any{1, p.pending, p0, pstep}},
		{"failed", cols + `NULL, 'bench.failed' FROM generate_series(1, ?) g, LATERAL (SELECT to_timestamp(?::float8 + (g - 1) * ?::float8)) s(t)`,
			[]any{4, p.failedOld, f0, fstep}},
		{"vacuum", `VACUUM ANALYZE tb_outbox_event`, nil},
	} {
		if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
			return fmt.Errorf("load %s rows: %w", q.what, err)
		}
	}
	return nil
}

// partition is one hourly partition of the partitioned outbox.
type partition struct {
	name     string
	from, to time.Time
}

// partitionOutbox replaces the migrated tb_outbox_event with a table of the
// same columns, check constraints, indexes and insert trigger, partitioned
// by range on created_at with one partition per hour from start to end.
// The primary key and the event_id unique constraint must include the
// partition key, so they become (id, created_at) and (event_id,
// created_at): event_id is then only unique within an hour.
func partitionOutbox(ctx context.Context, db *bun.DB, start, end time.Time) ([]partition, error) {
	if _, err := db.ExecContext(ctx, "ALTER TABLE tb_outbox_event RENAME TO tb_outbox_event_template"); err != nil {
		return nil, fmt.Errorf("rename the migrated outbox: %w", err)
	}
	var defs []string
	if err := db.NewRaw(`SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
		WHERE i.indrelid = 'tb_outbox_event_template'::regclass
		AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`).Scan(ctx, &defs); err != nil {
		return nil, fmt.Errorf("read the outbox indexes: %w", err)
	}
	stmts := []string{
		`CREATE TABLE tb_outbox_event (LIKE tb_outbox_event_template INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY)
			PARTITION BY RANGE (created_at)`,
		`DROP TABLE tb_outbox_event_template CASCADE`, // and vw_outbox_event with it
		`ALTER TABLE tb_outbox_event ADD CONSTRAINT pk_outbox_event PRIMARY KEY (id, created_at),
			ADD CONSTRAINT uq_outbox_event_event_id UNIQUE (event_id, created_at)`,
		`CREATE TRIGGER tg_outbox_event_notify AFTER INSERT ON tb_outbox_event
			FOR EACH STATEMENT EXECUTE FUNCTION fn_outbox_event_notify()`,
	}
	for _, d := range defs {
		stmts = append(stmts, strings.Replace(d, " ON public.tb_outbox_event_template ", " ON public.tb_outbox_event ", 1))
	}
	var parts []partition
	for t := start; t.Before(end); t = t.Add(time.Hour) {
		pt := partition{name: "tb_outbox_event_p" + t.Format("2006010215"), from: t, to: t.Add(time.Hour)}
		parts = append(parts, pt)
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s PARTITION OF tb_outbox_event FOR VALUES FROM ('%s') TO ('%s') WITH (autovacuum_enabled = off)",
			pt.name, pt.from.Format(time.RFC3339), pt.to.Format(time.RFC3339)))
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return nil, fmt.Errorf("partition the outbox: %s: %w", s, err)
		}
	}
	return parts, nil
}

// busySQL is true while a partition holds a row retention must keep: one
// not Delivered, one delivered at or after the cutoff, or one with an open
// consumer failure (PurgeDelivered's rules, per partition). Each arm reads
// a partial index or the failure table's open-failure index.
const busySQL = `SELECT EXISTS (SELECT 1 FROM ? WHERE status = 1)
	OR EXISTS (SELECT 1 FROM ? WHERE status = 2)
	OR EXISTS (SELECT 1 FROM ? WHERE status = 4)
	OR EXISTS (SELECT 1 FROM ? WHERE status = 3 AND delivered_at >= ?)
	OR EXISTS (SELECT 1 FROM tb_outbox_consumer_failure f JOIN ? p ON p.event_id = f.event_id WHERE f.resolved_at IS NULL)`

func partitionBusy(ctx context.Context, db bun.IDB, name string, cutoff time.Time) (bool, error) {
	t := bun.Ident(name)
	var busy bool
	err := db.NewRaw(busySQL, t, t, t, t, cutoff, t).Scan(ctx, &busy)
	return busy, err
}

// dropPartitions removes every partition wholly before cutoff that holds
// only rows retention may remove. It checks, detaches with CONCURRENTLY (a
// statement of its own: it refuses a transaction block, and waits for the
// transactions using the table instead of blocking them), checks again
// (a replay or a consumer failure may have come in between) and drops, or
// attaches the partition back. A DETACH ... CONCURRENTLY that is
// interrupted leaves the partition "detach pending"; rerun it with
// FINALIZE.
func dropPartitions(ctx context.Context, db *bun.DB, parts []partition, cutoff time.Time) (dropped, kept int, err error) {
	for _, pt := range parts {
		if pt.to.After(cutoff) {
			continue
		}
		busy, err := partitionBusy(ctx, db, pt.name, cutoff)
		if err != nil {
			return dropped, kept, fmt.Errorf("check partition %s: %w", pt.name, err)
		}
		if busy {
			kept++
			continue
		}
		if _, err := db.ExecContext(ctx, "ALTER TABLE tb_outbox_event DETACH PARTITION ? CONCURRENTLY", bun.Ident(pt.name)); err != nil {
			return dropped, kept, fmt.Errorf("detach partition %s (if it is left detach pending, run ALTER TABLE tb_outbox_event DETACH PARTITION %s FINALIZE): %w", pt.name, pt.name, err)
		}
		if busy, err = partitionBusy(ctx, db, pt.name, cutoff); err != nil || busy {
			// The attach skips its scan when a CHECK constraint matches the
			// bound; DETACH CONCURRENTLY adds one on 15.20 (newer releases
			// may not, and then it scans the partition).
			if _, aerr := db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE tb_outbox_event ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')",
				pt.name, pt.from.Format(time.RFC3339), pt.to.Format(time.RFC3339))); aerr != nil {
				return dropped, kept, fmt.Errorf("attach partition %s back (it holds rows to keep): %w", pt.name, errors.Join(err, aerr))
			}
			if err != nil {
				return dropped, kept, fmt.Errorf("recheck detached partition %s: %w", pt.name, err)
			}
			kept++
			continue
		}
		if _, err := db.ExecContext(ctx, "DROP TABLE ?", bun.Ident(pt.name)); err != nil {
			return dropped, kept, fmt.Errorf("drop detached partition %s: %w", pt.name, err)
		}
		dropped++
	}
	return dropped, kept, nil
}

func countRows(ctx context.Context, db *bun.DB) (int64, error) {
	var n int64
	if err := db.NewRaw("SELECT count(*) FROM tb_outbox_event").Scan(ctx, &n); err != nil {
		return 0, fmt.Errorf("count outbox rows: %w", err)
	}
	return n, nil
}

// outboxSize is the table's size with its indexes and TOAST, summed over
// the partitions when it is partitioned (pg_total_relation_size of a
// partitioned table is 0).
func outboxSize(ctx context.Context, db *bun.DB) (int64, error) {
	var n int64
	err := db.NewRaw(`SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		WHERE c.oid = 'tb_outbox_event'::regclass
		OR c.oid IN (SELECT relid FROM pg_partition_tree('tb_outbox_event'))`).Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("outbox size: %w", err)
	}
	return n, nil
}

// heapFree is the free space the free space map records in the outbox's
// heap (its partitions' heaps): what later inserts can reuse. -1 when
// pg_freespacemap is not available.
func heapFree(ctx context.Context, db *bun.DB) int64 {
	if _, err := db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_freespacemap"); err != nil {
		return -1
	}
	var n int64
	if err := db.NewRaw(`SELECT coalesce(sum(f.avail), 0)::bigint FROM pg_class c, LATERAL pg_freespace(c.oid) f
		WHERE c.relkind = 'r' AND (c.oid = 'tb_outbox_event'::regclass
		OR c.oid IN (SELECT relid FROM pg_partition_tree('tb_outbox_event')))`).Scan(ctx, &n); err != nil {
		return -1
	}
	return n
}

// walMeter measures a phase's WAL twice: the cluster-wide LSN difference
// (which counts every database's writes, another test run's included) and,
// when pg_waldump can read the server's pg_wal, the bytes of the records
// of this database alone.
type walMeter struct {
	bin, dir string // empty: no pg_waldump figure
	dbOID    string
}

func newWALMeter(ctx context.Context, db *bun.DB, flagValue string) (*walMeter, string) {
	w := &walMeter{}
	if err := db.NewRaw("SELECT oid::text FROM pg_database WHERE datname = current_database()").Scan(ctx, &w.dbOID); err != nil {
		return w, "WAL: cluster-wide LSN difference only (cannot read the database oid: " + err.Error() + ")."
	}
	if flagValue == "off" {
		return w, "WAL: cluster-wide LSN difference only (-waldump off); it includes other databases' writes."
	}
	var dataDir string
	var version int
	if err := db.NewRaw("SELECT current_setting('data_directory'), current_setting('server_version_num')::int").Scan(ctx, &dataDir, &version); err != nil {
		return w, "WAL: cluster-wide LSN difference only (data_directory needs a superuser or pg_read_all_settings)."
	}
	bin := flagValue
	if bin == "auto" {
		bin = fmt.Sprintf("/usr/lib/postgresql/%d/bin/pg_waldump", version/10000)
		if _, err := os.Stat(bin); err != nil {
			if bin, err = exec.LookPath("pg_waldump"); err != nil {
				return w, "WAL: cluster-wide LSN difference only (no pg_waldump found; pass -waldump PATH)."
			}
		}
	}
	dir := dataDir + "/pg_wal"
	if _, err := os.ReadDir(dir); err != nil {
		return w, "WAL: cluster-wide LSN difference only (cannot read " + dir + "; run on the server host as its owner or root)."
	}
	w.bin, w.dir = bin, dir
	return w, "WAL: bytes/row and the first MiB figure count only this database's WAL records (pg_waldump, by relation and transaction); the second is the cluster-wide pg_wal_lsn_diff, which includes other databases' writes."
}

// measure runs f after a CHECKPOINT (so every page f touches first costs a
// full-page image, as in a sweep between checkpoints) and returns its cost.
// A temporary replication slot keeps the WAL segments until pg_waldump
// has read them.
func (w *walMeter) measure(ctx context.Context, db *bun.DB, f func(context.Context) error) (cost, error) {
	var c cost
	c.walDB = -1
	if _, err := db.ExecContext(ctx, "CHECKPOINT"); err != nil {
		return c, fmt.Errorf("checkpoint: %w", err)
	}
	if w.bin != "" {
		conn, err := db.Conn(ctx)
		if err != nil {
			return c, err
		}
		defer conn.Close()
		slot := "outboxbench_" + randomHex(6)
		if _, err := conn.ExecContext(ctx, "SELECT pg_create_physical_replication_slot(?, true, true)", slot); err != nil {
			return c, fmt.Errorf("create a temporary replication slot to keep the WAL (pass -waldump off to skip): %w", err)
		}
		defer func() { _, _ = conn.ExecContext(context.Background(), "SELECT pg_drop_replication_slot(?)", slot) }()
	}
	var lsn0, lsn1 string
	if err := db.NewRaw("SELECT pg_current_wal_insert_lsn()::text").Scan(ctx, &lsn0); err != nil {
		return c, fmt.Errorf("read wal position: %w", err)
	}
	cpu0, use0, t0 := procstat.SampleServers(ctx, db), sampleUsage(), time.Now()
	if err := f(ctx); err != nil {
		return c, err
	}
	c.elapsed = time.Since(t0)
	cpu1, use1 := procstat.SampleServers(ctx, db), sampleUsage()
	c.pgCPU, _ = cpu1.Since(cpu0)
	_, c.busy = use1.since(use0)
	if err := db.NewRaw("SELECT pg_current_wal_insert_lsn()::text").Scan(ctx, &lsn1); err != nil {
		return c, fmt.Errorf("read wal position: %w", err)
	}
	if err := db.NewRaw("SELECT pg_wal_lsn_diff(?::pg_lsn, ?::pg_lsn)::bigint", lsn1, lsn0).Scan(ctx, &c.walLSN); err != nil {
		return c, fmt.Errorf("wal difference: %w", err)
	}
	if w.bin != "" {
		// Wait until the records up to lsn1 are written out.
		for range 100 {
			var ok bool
			if err := db.NewRaw("SELECT pg_current_wal_lsn() >= ?::pg_lsn", lsn1).Scan(ctx, &ok); err != nil || ok {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		n, err := w.dbBytes(ctx, lsn0, lsn1)
		if err != nil {
			return c, err
		}
		c.walDB = n
	}
	return c, nil
}

var walRecord = regexp.MustCompile(`len \(rec/tot\):\s*\d+/\s*(\d+), tx:\s*(\d+),`)

// dbBytes sums the total length of the WAL records between from and to
// that touch this database's relations (rel T/D/R, base/D/R) or belong to a
// transaction that did (its commit record).
func (w *walMeter) dbBytes(ctx context.Context, from, to string) (int64, error) {
	cmd := exec.CommandContext(ctx, w.bin, "-p", w.dir, "-s", from, "-e", to)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start pg_waldump: %w", err)
	}
	mark := "/" + w.dbOID + "/"
	txs := map[string]bool{}
	var total, records int64
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		m := walRecord.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		mine := strings.Contains(line, mark)
		if mine && m[2] != "0" {
			txs[m[2]] = true
		}
		if mine || txs[m[2]] {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			total += n
			records++
		}
	}
	werr := cmd.Wait()
	if records == 0 && werr != nil {
		return 0, fmt.Errorf("pg_waldump %s..%s: %w: %s", from, to, werr, strings.TrimSpace(stderr.String()))
	}
	return total, nil
}

// appendWriter appends one event per autocommit INSERT at a fixed rate and
// records each INSERT's latency, split at mark.
type appendWriter struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	lat     [2][]time.Duration
	phase   int
	started time.Time
	n       int
	err     error
	db      *bun.DB
}

func startWriter(ctx context.Context, e *env, rate int) *appendWriter {
	const workers = 16
	ctx, cancel := context.WithCancel(ctx)
	w := &appendWriter{cancel: cancel, started: time.Now()}
	db, err := e.open(ctx, workers)
	if err != nil {
		w.err = err
		return w
	}
	w.db = db
	jobs := make(chan struct{}, workers)
	for range workers {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for range jobs {
				evs, err := newEvents(1, time.Now())
				if err == nil {
					t := time.Now()
					err = pgoutbox.Append(ctx, db, evs...)
					d := time.Since(t)
					w.mu.Lock()
					if err == nil {
						w.lat[w.phase] = append(w.lat[w.phase], d)
						w.n++
					} else if ctx.Err() == nil && w.err == nil {
						w.err = err
					}
					w.mu.Unlock()
				}
			}
		}()
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer close(jobs)
		interval := time.Second / time.Duration(rate)
		next := time.Now()
		for ctx.Err() == nil {
			next = next.Add(interval)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			select {
			case jobs <- struct{}{}:
			case <-ctx.Done():
			}
		}
	}()
	return w
}

// mark starts the second latency series (during retention).
func (w *appendWriter) mark() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = 1
}

// stop ends the writer and returns both latency series sorted, the
// achieved rate and the rows appended.
func (w *appendWriter) stop() ([2][]time.Duration, float64, int, error) {
	w.cancel()
	w.wg.Wait()
	if w.db != nil {
		_ = w.db.Close()
	}
	for i := range w.lat {
		slices.Sort(w.lat[i])
	}
	return w.lat, float64(w.n) / time.Since(w.started).Seconds(), w.n, w.err
}

func mib(b int64) string {
	if b < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", float64(b)/(1<<20))
}
