// Command relaysbench drains one pre-filled outbox with 1, 2, 4 and 8 real
// relay processes (apps/relay, built once) against one Postgres and one
// Redis, and reports per relay count: events/s, CPU µs per event of the
// relays and of Postgres, and how the claims went (claims, rows per claim
// against the batch size, and outbox_claims_total by result: with a
// backlog left, a short or empty claim means SKIP LOCKED skipped rows
// another relay held). It shows where adding replicas stops helping
// (docs/scaling.md).
//
//	go run ./bench/cmd/relaysbench -events 200000 -relays 1,2,4,8
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/bench/internal/procstat"
	"github.com/july/template/core/outbox"
)

func main() {
	events := flag.Int("events", 200_000, "events pre-filled before each drain")
	relays := flag.String("relays", "1,2,4,8", "relay process counts to try")
	batch := flag.Int("batch", 0, "RELAY_BATCH_SIZE for every relay (0: the relay's default)")
	loops := flag.Int("loops", 0, "RELAY_LOOPS for every relay (0: the relay's default)")
	dbURL := flag.String("db", envOr("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "a Postgres role that may CREATE DATABASE")
	redisURL := flag.String("redis", envOr("TEST_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis for Asynq")
	flag.Parse()
	if err := run(context.Background(), *dbURL, *redisURL, *events, *relays, *batch, *loops); err != nil {
		fmt.Fprintln(os.Stderr, "relaysbench:", err)
		os.Exit(1)
	}
}

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
	bin := filepath.Join(dir, "relay")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./apps/relay")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build apps/relay (run from the repository root): %w", err)
	}
	fmt.Printf("| relays | events/s | CPU µs/event: relays / Postgres / Redis | claims: full / short / empty | rows per claim |\n|---:|---:|---|---|---:|\n")
	for _, c := range counts {
		r, err := once(ctx, base, redisURL, bin, n, c, batch, loops)
		if err != nil {
			return fmt.Errorf("%d relays: %w", c, err)
		}
		fmt.Printf("| %d | %.0f | %.1f / %.1f / %.1f | %.0f / %.0f / %.0f | %.1f |\n", c, r.rate, r.relayUS, r.pgUS, r.redisUS,
			r.claims["full"], r.claims["short"], r.claims["empty"], r.rowsPerClaim)
	}
	return nil
}

type result struct {
	rate, relayUS, pgUS, redisUS float64
	claims                       map[string]float64 // outbox_claims_total by result
	rowsPerClaim                 float64
}

func once(ctx context.Context, base, redisURL, bin string, n, relays, batch, loops int) (result, error) {
	name := "rb_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	admin, err := openDB(base)
	if err != nil {
		return result{}, err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return result{}, err
	}
	defer func() {
		_, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}()
	u, _ := url.Parse(base)
	u.Path = "/" + name
	db, err := openDB(u.String())
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	if err := postgres.Migrate(ctx, db); err != nil {
		return result{}, err
	}
	if err := prefill(ctx, db, n); err != nil {
		return result{}, err
	}
	queue := "rb_" + name[3:]

	procs := make([]*exec.Cmd, relays)
	admins := make([]string, relays)
	for i := range procs {
		admins[i] = freeAddr()
		env := append(os.Environ(), "DATABASE_URL="+u.String(), "REDIS_URL="+redisURL, "ASYNQ_QUEUE="+queue,
			"ADMIN_ADDR="+admins[i], "RELAY_OWNER="+fmt.Sprintf("bench-%d", i), "WORKER_ENABLED=false", "LOG_LEVEL=warn")
		if batch > 0 {
			env = append(env, "RELAY_BATCH_SIZE="+strconv.Itoa(batch))
		}
		if loops > 0 {
			env = append(env, "RELAY_LOOPS="+strconv.Itoa(loops))
		}
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, io.Discard, os.Stderr
		if err := cmd.Start(); err != nil {
			return result{}, err
		}
		procs[i] = cmd
	}
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}()
	start := time.Now()
	s0 := procstat.SampleServers(ctx, db)
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
	pgCPU, redisCPU := procstat.SampleServers(ctx, db).Since(s0)
	res := result{claims: map[string]float64{}}
	var relayCPU time.Duration
	var rows, batches float64
	for i, p := range procs {
		relayCPU += procstat.CPU(p.Process.Pid)
		m, err := scrape(admins[i])
		if err != nil {
			return result{}, err
		}
		for k, v := range m {
			if r, ok := strings.CutPrefix(k, `outbox_claims_total{result="`); ok {
				res.claims[strings.TrimSuffix(r, `"}`)] += v
			}
		}
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
				Payload: map[string]any{"n": j, "amount_cents": 1500}, Now: now,
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

// scrape reads the relay's /metrics into name -> summed value (labels
// dropped, but for outbox_claims_total's), waiting for the admin server to
// answer.
func scrape(addr string) (map[string]float64, error) {
	var res *http.Response
	var err error
	for range 50 {
		if res, err = http.Get("http://" + addr + "/metrics"); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("scrape relay metrics at %s: %w", addr, err)
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		key, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(key, '{'); i >= 0 && !strings.HasPrefix(key, "outbox_claims_total") {
			key = key[:i]
		}
		v, err := strconv.ParseFloat(strings.Fields(val)[0], 64)
		if err == nil {
			out[key] += v
		}
	}
	return out, sc.Err()
}

func openDB(dsn string) (*bun.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("the database URL is malformed (value hidden)")
	}
	sqldb := stdlib.OpenDB(*cfg)
	sqldb.SetMaxOpenConns(8)
	return bun.NewDB(sqldb, pgdialect.New()), nil
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
