package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
)

// common are the flags every subcommand takes.
type common struct {
	databaseURL        string
	redisURL           string
	runs               int
	cpuprofile         string
	publishConcurrency int
	setupSQL           string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.databaseURL, "database-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"Postgres server; a scratch database is created there and dropped at the end (add default_query_exec_mode=... to try pgx modes)")
	fs.StringVar(&c.redisURL, "redis-url", "redis://127.0.0.1:6379/0", "Redis for asynq; a scratch queue is used and deleted")
	fs.IntVar(&c.runs, "runs", 3, "repetitions of each scenario; the table shows the median")
	fs.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&c.setupSQL, "setup-sql", "", "SQL run on the scratch database after migrating, to try a schema change (e.g. \"DROP INDEX ix_outbox_event_request\")")
	fs.IntVar(&c.publishConcurrency, "publish-concurrency", queue.DefaultPublishConcurrency, "queue.Config.PublishConcurrency")
}

// env is one subcommand's scratch database on the server.
type env struct {
	c     common
	admin *sql.DB
	name  string
	url   string
	redis asynq.RedisConnOpt
}

// newEnv creates and migrates a scratch database. Close drops it.
func newEnv(ctx context.Context, c common) (*env, error) {
	if c.runs < 1 {
		return nil, fmt.Errorf("-runs %d: pass 1 or more", c.runs)
	}
	ropt, err := asynq.ParseRedisURI(c.redisURL)
	if err != nil {
		return nil, fmt.Errorf("parse -redis-url: %w", err)
	}
	admin, err := sql.Open("pgx", c.databaseURL)
	if err != nil {
		return nil, fmt.Errorf("open -database-url: %w", err)
	}
	e := &env{c: c, admin: admin, name: "outboxbench_" + randomHex(6), redis: ropt}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+e.name); err != nil {
		_ = admin.Close()
		return nil, fmt.Errorf("create scratch database (the role needs CREATEDB): %w", err)
	}
	if e.url, err = withDatabase(c.databaseURL, e.name); err != nil {
		e.Close()
		return nil, err
	}
	db, err := e.open(ctx, 4)
	if err != nil {
		e.Close()
		return nil, err
	}
	defer db.Close()
	if err := postgres.Migrate(ctx, db); err != nil {
		e.Close()
		return nil, fmt.Errorf("migrate scratch database: %w", err)
	}
	if c.setupSQL != "" {
		if _, err := db.ExecContext(ctx, c.setupSQL); err != nil {
			e.Close()
			return nil, fmt.Errorf("-setup-sql: %w", err)
		}
	}
	return e, nil
}

// open returns a pool on the scratch database.
func (e *env) open(ctx context.Context, conns int) (*bun.DB, error) {
	return postgres.Open(ctx, postgres.Config{URL: e.url, MaxOpenConns: conns, MaxIdleConns: conns})
}

// openWith opens a pool on the scratch database with cfg (its URL is
// filled in, and MaxIdleConns follows MaxOpenConns).
func (e *env) openWith(ctx context.Context, cfg postgres.Config) (*bun.DB, error) {
	cfg.URL, cfg.MaxIdleConns = e.url, cfg.MaxOpenConns
	return postgres.Open(ctx, cfg)
}

// openRelay opens a pool like apps/relay's own (its stores take
// relayStoreConfig: asynchronous commit per statement).
func (e *env) openRelay(ctx context.Context, conns int) (*bun.DB, error) {
	return e.openRelayAt(ctx, e.url, conns)
}

// openRelayAt is openRelay on url (the scratch database, or it through a
// pooler).
func (e *env) openRelayAt(ctx context.Context, url string, conns int) (*bun.DB, error) {
	return postgres.Open(ctx, postgres.Config{URL: url, MaxOpenConns: conns, MaxIdleConns: conns,
		RuntimeParams: map[string]string{"application_name": "outbox-relay"}})
}

// relayStoreConfig is the relay's store configuration (postgres.RelayModule).
var relayStoreConfig = pgoutbox.Config{AsynchronousCommit: true}

// viaPooler returns the scratch database's URL with the host and port of
// poolerURL (a PgBouncer in front of the same server that forwards every
// database name, like scripts/pgbouncer.sh's).
func (e *env) viaPooler(poolerURL string) (string, error) {
	p, err := url.Parse(poolerURL)
	if err != nil || p.Host == "" {
		return "", fmt.Errorf("-pooler-url %q: want postgres://host:port/db", poolerURL)
	}
	u, err := url.Parse(e.url)
	if err != nil {
		return "", err
	}
	u.Host = p.Host
	return u.String(), nil
}

// openPgx opens a plain pgx pool for the bare, River and Watermill relays:
// prepared statements (pgx's default), asynchronous commit like the
// relay's pool. Its connections are opened before it returns, so the CPU
// sample sees them.
func (e *env) openPgx(ctx context.Context, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(e.url)
	if err != nil {
		return nil, fmt.Errorf("parse scratch url: %w", err)
	}
	cfg.MaxConns, cfg.MinConns = int32(conns), int32(conns)
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pgx pool: %w", err)
	}
	held := make([]*pgxpool.Conn, 0, conns)
	for range conns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("open pgx pool: %w", err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}
	return pool, nil
}

// Close drops the scratch database, closing whatever is still connected.
func (e *env) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+e.name+" WITH (FORCE)"); err != nil {
		fmt.Printf("warning: drop scratch database %s: %v\n", e.name, err)
	}
	_ = e.admin.Close()
}

// reset empties the outbox between runs so each starts from the same table.
func (e *env) reset(ctx context.Context, db *bun.DB) error {
	if _, err := db.ExecContext(ctx, "TRUNCATE tb_outbox_event"); err != nil {
		return fmt.Errorf("truncate outbox: %w", err)
	}
	return nil
}

// scratchQueue is a Publisher on a queue of its own, with a client of its
// own (asynq caches which queues it registered per client).
type scratchQueue struct {
	*queue.Publisher
	client *asynq.Client
	redis  asynq.RedisConnOpt
	name   string
}

func (e *env) newQueue() (*scratchQueue, error) {
	q := &scratchQueue{client: asynq.NewClient(e.redis), redis: e.redis, name: "outboxbench-" + randomHex(6)}
	enq, err := queue.NewPublisher(q.client, queue.Config{Queue: q.name, PublishConcurrency: e.c.publishConcurrency})
	if err != nil {
		_ = q.client.Close()
		return nil, err
	}
	q.Publisher = enq
	return q, nil
}

// Close deletes the queue with its tasks.
func (q *scratchQueue) Close() {
	_ = q.client.Close()
	in := asynq.NewInspector(q.redis)
	defer in.Close()
	if err := in.DeleteQueue(q.name, true); err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
		fmt.Printf("warning: delete scratch queue %s: %v\n", q.name, err)
	}
}

func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		return "", errors.New("-database-url must be a postgres:// URL")
	}
	u.Path = "/" + name
	return u.String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// relayStore opens a relay-settings pool of conns and a pgoutbox.Store on
// it; close the pool when done.
func (e *env) relayStore(ctx context.Context, conns int) (*bun.DB, *pgoutbox.Store, error) {
	db, err := e.openRelay(ctx, conns)
	if err != nil {
		return nil, nil, err
	}
	store, err := pgoutbox.NewStore(db, relayStoreConfig)
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	return db, store, nil
}
