// Package relayproc is what the bench commands that drive real relay
// processes share: a fresh migrated database per run, the apps/relay
// binary built once, relay children started against them, and their
// /metrics read back.
package relayproc

import (
	"bufio"
	"context"
	"errors"
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
)

// Build compiles ./apps/relay into dir (run from the repository root) and
// returns the binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "relay")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./apps/relay")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build apps/relay (run from the repository root): %w", err)
	}
	return bin, nil
}

// DB is a fresh, migrated database made for one run.
type DB struct {
	*bun.DB
	// URL addresses the database, for the relays' DATABASE_URL.
	URL string
	// Name is the database's name, prefix plus 8 random characters.
	Name  string
	admin *bun.DB
}

// FreshDB creates a database named prefix+random next to base's (a role
// that may CREATE DATABASE) and migrates it; Close drops it.
func FreshDB(ctx context.Context, base, prefix string) (*DB, error) {
	name := prefix + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	admin, err := OpenDB(base)
	if err != nil {
		return nil, err
	}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		_ = admin.Close()
		return nil, err
	}
	u, _ := url.Parse(base)
	u.Path = "/" + name
	d := &DB{URL: u.String(), Name: name, admin: admin}
	if d.DB, err = OpenDB(d.URL); err != nil {
		d.Close()
		return nil, err
	}
	if err := postgres.Migrate(ctx, d.DB); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Close closes the connections and drops the database.
func (d *DB) Close() {
	if d.DB != nil {
		_ = d.DB.Close()
	}
	_, _ = d.admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+d.Name+" WITH (FORCE)")
	_ = d.admin.Close()
}

// Proc is one running relay child.
type Proc struct {
	Cmd *exec.Cmd
	// Admin is its ADMIN_ADDR (health and /metrics).
	Admin string
}

// Start starts n relays of bin on db's database, Redis redisURL and Asynq
// queue queue, each with its own owner (bench-<i>) and admin address, the
// worker off (WORKER_ENABLED=false), LOG_LEVEL=warn, plus env (KEY=value).
// Stop ends them.
func Start(ctx context.Context, bin, dbURL, redisURL, queue string, n int, env ...string) ([]*Proc, error) {
	procs := make([]*Proc, 0, n)
	for i := range n {
		p := &Proc{Admin: FreeAddr()}
		e := append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+redisURL, "ASYNQ_QUEUE="+queue,
			"ADMIN_ADDR="+p.Admin, "RELAY_OWNER="+fmt.Sprintf("bench-%d", i), "WORKER_ENABLED=false", "LOG_LEVEL=warn")
		p.Cmd = exec.CommandContext(ctx, bin)
		p.Cmd.Env, p.Cmd.Stdout, p.Cmd.Stderr = append(e, env...), io.Discard, os.Stderr
		if err := p.Cmd.Start(); err != nil {
			Stop(procs)
			return nil, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// Stop kills the relays and waits for them.
func Stop(procs []*Proc) {
	for _, p := range procs {
		_ = p.Cmd.Process.Kill()
		_ = p.Cmd.Wait()
	}
}

// Scrape reads the relay's /metrics into name -> summed value (labels
// dropped, but for the series named in keepLabels, which stay whole),
// waiting for the admin server to answer.
func Scrape(addr string, keepLabels ...string) (map[string]float64, error) {
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
		if i := strings.IndexByte(key, '{'); i >= 0 && !keep(key[:i], keepLabels) {
			key = key[:i]
		}
		v, err := strconv.ParseFloat(strings.Fields(val)[0], 64)
		if err == nil {
			out[key] += v
		}
	}
	return out, sc.Err()
}

func keep(name string, names []string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// Claims sums outbox_claims_total by result (full, short, empty) from
// scrapes that kept its labels.
func Claims(m map[string]float64, into map[string]float64) {
	for k, v := range m {
		if r, ok := strings.CutPrefix(k, `outbox_claims_total{result="`); ok {
			into[strings.TrimSuffix(r, `"}`)] += v
		}
	}
}

// OpenDB opens dsn through pgx's stdlib driver, at most 8 connections.
func OpenDB(dsn string) (*bun.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("the database URL is malformed (value hidden)")
	}
	sqldb := stdlib.OpenDB(*cfg)
	sqldb.SetMaxOpenConns(8)
	return bun.NewDB(sqldb, pgdialect.New()), nil
}

// FreeAddr returns a loopback address nobody listens on right now.
func FreeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// EnvOr returns the environment variable k, or def when it is empty.
func EnvOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
