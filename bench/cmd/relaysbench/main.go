// Command relaysbench drains one pre-filled outbox with 1, 2, 4 and 8 real
// relay processes (apps/relay, built once) against one Postgres and one
// Redis, and reports per relay count: events/s, CPU µs per event of the
// relays and of Postgres, and how the claims went (claims, rows per claim
// against the batch size, and outbox_claims_total by result: with a
// backlog left, a short or empty claim means SKIP LOCKED skipped rows
// another relay held). It shows where adding replicas stops helping
// (docs/scaling.md). The last column is the largest peak RSS (VmHWM) of
// one relay: with -payload at outbox.MaxPayloadBytes it shows whether the
// pod's memory limit holds (docs/operations.md).
//
//	go run ./bench/cmd/relaysbench -events 200000 -relays 1,2,4,8
//	go run ./bench/cmd/relaysbench -events 2000 -relays 1 -payload 262144
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/bench/internal/procstat"
	"github.com/july/template/bench/internal/relayproc"
	"github.com/july/template/core/outbox"
)

func main() {
	events := flag.Int("events", 200_000, "events pre-filled before each drain")
	relays := flag.String("relays", "1,2,4,8", "relay process counts to try")
	batch := flag.Int("batch", 0, "RELAY_BATCH_SIZE for every relay (0: the relay's default)")
	loops := flag.Int("loops", 0, "RELAY_LOOPS for every relay (0: the relay's default)")
	payload := flag.Int("payload", 0, "bytes of filler in each event's payload, up to outbox.MaxPayloadBytes less 64 (0: a small payload)")
	dbURL := flag.String("db", relayproc.EnvOr("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "a Postgres role that may CREATE DATABASE")
	redisURL := flag.String("redis", relayproc.EnvOr("TEST_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis for Asynq")
	flag.Parse()
	if *payload < 0 || *payload > outbox.MaxPayloadBytes-64 {
		fmt.Fprintf(os.Stderr, "relaysbench: -payload %d outside 0..%d\n", *payload, outbox.MaxPayloadBytes-64)
		os.Exit(2)
	}
	fill = strings.Repeat("x", *payload)
	if err := run(context.Background(), *dbURL, *redisURL, *events, *relays, *batch, *loops); err != nil {
		fmt.Fprintln(os.Stderr, "relaysbench:", err)
		os.Exit(1)
	}
}

// fill is each event's filler (-payload).
var fill string

func run(ctx context.Context, base, redisURL string, n int, relaysFlag string, batch, loops int) error {
	var counts []int
	for _, s := range strings.Split(relaysFlag, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < 1 {
			return fmt.Errorf("-relays %q: want counts like 1,2,4,8", relaysFlag)
		}
		counts = append(counts, c)
	}
	dir, err := os.MkdirTemp("", "relaysbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := relayproc.Build(ctx, dir)
	if err != nil {
		return err
	}
	fmt.Printf("| relays | events/s | CPU µs/event: relays / Postgres / Redis | claims: full / short / empty | rows per claim | peak RSS MiB |\n|---:|---:|---|---|---:|---:|\n")
	for _, c := range counts {
		r, err := once(ctx, base, redisURL, bin, n, c, batch, loops)
		if err != nil {
			return fmt.Errorf("%d relays: %w", c, err)
		}
		fmt.Printf("| %d | %.0f | %.1f / %.1f / %.1f | %.0f / %.0f / %.0f | %.1f | %.0f |\n", c, r.rate, r.relayUS, r.pgUS, r.redisUS,
			r.claims["full"], r.claims["short"], r.claims["empty"], r.rowsPerClaim, float64(r.peakRSS)/(1<<20))
	}
	return nil
}

type result struct {
	rate, relayUS, pgUS, redisUS float64
	claims                       map[string]float64 // outbox_claims_total by result
	rowsPerClaim                 float64
	peakRSS                      uint64 // the largest VmHWM of one relay
}

func once(ctx context.Context, base, redisURL, bin string, n, relays, batch, loops int) (result, error) {
	db, err := relayproc.FreshDB(ctx, base, "rb_")
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	if err := prefill(ctx, db.DB, n); err != nil {
		return result{}, err
	}
	var env []string
	if batch > 0 {
		env = append(env, "RELAY_BATCH_SIZE="+strconv.Itoa(batch))
	}
	if loops > 0 {
		env = append(env, "RELAY_LOOPS="+strconv.Itoa(loops))
	}
	procs, err := relayproc.Start(ctx, bin, db.URL, redisURL, "rb_"+db.Name[3:], relays, env...)
	if err != nil {
		return result{}, err
	}
	defer relayproc.Stop(procs)
	start := time.Now()
	s0 := procstat.SampleServers(ctx, db.DB)
	deadline := start.Add(10 * time.Minute)
	for {
		// Two probes of the pending and delivering partial indexes: a
		// count of the table would cost Postgres more than the relays do.
		var left bool
		if err := db.NewRaw("SELECT EXISTS (SELECT 1 FROM tb_outbox_event WHERE status = 1) OR EXISTS (SELECT 1 FROM tb_outbox_event WHERE status = 2)").Scan(ctx, &left); err != nil {
			return result{}, err
		}
		if !left {
			break
		}
		if time.Now().After(deadline) {
			return result{}, errors.New("events still undelivered after 10 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	pgCPU, redisCPU := procstat.SampleServers(ctx, db.DB).Since(s0)
	res := result{claims: map[string]float64{}}
	var relayCPU time.Duration
	var rows, batches float64
	for _, p := range procs {
		relayCPU += procstat.CPU(p.Cmd.Process.Pid)
		res.peakRSS = max(res.peakRSS, procstat.PeakRSS(p.Cmd.Process.Pid))
		m, err := relayproc.Scrape(p.Admin, "outbox_claims_total")
		if err != nil {
			return result{}, err
		}
		relayproc.Claims(m, res.claims)
		batches += m["outbox_claim_batch_size_count"]
		rows += m["outbox_claim_batch_size_sum"]
	}
	res.rate = float64(n) / elapsed.Seconds()
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	res.relayUS, res.pgUS, res.redisUS = us(relayCPU), us(pgCPU), us(redisCPU)
	if batches > 0 {
		res.rowsPerClaim = rows / batches
	}
	return res, nil
}

func prefill(ctx context.Context, db *bun.DB, n int) error {
	const chunk = 1000
	now := time.Now()
	for i := 0; i < n; i += chunk {
		evs := make([]outbox.Event, 0, chunk)
		for j := i; j < min(i+chunk, n); j++ {
			ev, err := outbox.New(outbox.NewParams{
				EventID: uuid.NewString(), EventType: "bench.relays", PayloadVersion: 1,
				AggregateType: "order", AggregateID: strconv.Itoa(j), ResourceType: "order", ResourceID: strconv.Itoa(j),
				RequestID: "req-" + strconv.Itoa(j), CorrelationID: "corr-" + strconv.Itoa(j/100),
				Payload: map[string]any{"n": j, "amount_cents": 1500, "fill": fill}, Now: now,
			})
			if err != nil {
				return err
			}
			evs = append(evs, ev)
		}
		if err := pgoutbox.Append(ctx, db, evs...); err != nil {
			return err
		}
	}
	_, err := db.ExecContext(ctx, "VACUUM ANALYZE tb_outbox_event")
	return err
}
