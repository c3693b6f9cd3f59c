// Command uploadbench measures the api's peak memory under concurrent
// maximum-size device-assignment uploads (bench/performance.md records the
// figures).
//
// It builds apps/api, runs it on a scratch database (created on
// -database-url, migrated with the examples, dropped at the end) and a
// Redis key prefix of its own, sends -n concurrent uploads of a -size CSV
// from -principals distinct agents, and samples the api process's VmRSS
// from /proc every few milliseconds. It prints the RSS before, the peak
// during the burst, VmHWM, and the answers by status.
//
//	go run ./bench/cmd/uploadbench                 # 200 uploads of 2 MiB from 200 agents
//	go run ./bench/cmd/uploadbench -principals 1   # one agent: its share bounds it
//	go run ./bench/cmd/uploadbench -env GOMEMLIMIT=512MiB
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/examples"
	"github.com/july/template/examples/devices"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "uploadbench:", err)
		os.Exit(1)
	}
}

type options struct {
	databaseURL, redisURL string
	n, principals, size   int
	env                   stringList
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func run(ctx context.Context, args []string) error {
	var o options
	fs := flag.NewFlagSet("uploadbench", flag.ContinueOnError)
	fs.StringVar(&o.databaseURL, "database-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "Postgres server; a scratch database is created there and dropped at the end")
	fs.StringVar(&o.redisURL, "redis-url", "redis://127.0.0.1:6379/0", "Redis for the api's config cache (a private key prefix is not needed: the api only reads)")
	fs.IntVar(&o.n, "n", 200, "concurrent uploads")
	fs.IntVar(&o.principals, "principals", 200, "distinct agents sending them (round robin)")
	fs.IntVar(&o.size, "size", 2<<20-64, "CSV bytes per upload (the route's maximum is 2 MiB)")
	fs.Var(&o.env, "env", "extra NAME=VALUE for the api process (repeatable), e.g. GOMEMLIMIT=512MiB")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "uploadbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "api")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/july/template/apps/api")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build apps/api: %w", err)
	}
	dbURL, drop, err := scratchDB(ctx, o.databaseURL)
	if err != nil {
		return err
	}
	defer drop()

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	adminAddr, err := freeAddr() // not the shared default 127.0.0.1:9091
	if err != nil {
		return err
	}
	secret := hex.EncodeToString(randomBytes(32))
	api := exec.Command(bin)
	api.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+o.redisURL, "AUTH_JWT_SECRET="+secret,
		"HTTP_ADDR="+addr, "ADMIN_ADDR="+adminAddr, "LOG_LEVEL=warn")
	api.Env = append(api.Env, o.env...)
	api.Stderr = os.Stderr
	if err := api.Start(); err != nil {
		return err
	}
	defer func() { _ = api.Process.Signal(os.Interrupt); _ = api.Wait() }()
	base := "http://" + addr
	if err := waitReady(ctx, base); err != nil {
		return err
	}
	before := procKB(api.Process.Pid, "VmRSS")

	csv := makeCSV(o.size)
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if kb := procKB(api.Process.Pid, "VmRSS"); kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.n, MaxConnsPerHost: o.n}}
	statuses := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := range o.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := token(secret, fmt.Sprintf("bench-agent-%d", i%o.principals))
			s := upload(ctx, client, base, tok, fmt.Sprintf("bench-%d-%s", i, hex.EncodeToString(randomBytes(4))), csv)
			mu.Lock()
			statuses[s]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	<-sampled
	hwm := procKB(api.Process.Pid, "VmHWM")

	fmt.Printf("uploads: %d x %d bytes from %d principals in %s; api env %v\n", o.n, len(csv), min(o.principals, o.n), elapsed.Round(time.Millisecond), []string(o.env))
	fmt.Printf("api RSS: before %.1f MiB, peak %.1f MiB, VmHWM %.1f MiB\n", mib(before), mib(peak.Load()), mib(hwm))
	keys := make([]string, 0, len(statuses))
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("  %s: %d\n", k, statuses[k])
	}
	return nil
}

func mib(kb int64) float64 { return float64(kb) / 1024 }

// upload sends one multipart upload and returns "status CODE".
func upload(ctx context.Context, c *http.Client, base, tok, key string, csv []byte) string {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "devices.csv")
	_, _ = fw.Write(csv)
	_ = mw.Close()
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/v1/device-assignments", &body)
	if err != nil {
		return "error"
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Idempotency-Key", key)
	res, err := c.Do(req)
	if err != nil {
		return "transport error"
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var env struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(b, &env)
	return strings.TrimSpace(strconv.Itoa(res.StatusCode) + " " + env.Error.Code)
}

// makeCSV returns a valid device CSV of about size bytes.
func makeCSV(size int) []byte {
	var b bytes.Buffer
	b.WriteString("device_sn,target_agent_id\n")
	for i := 0; b.Len() < size-40; i++ {
		fmt.Fprintf(&b, "DEV%012d,bench-target-agent\n", i)
	}
	return b.Bytes()
}

// token mints an HS256 bearer token for sub with role agent.
func token(secret, sub string) string {
	enc := base64.RawURLEncoding
	now := time.Now().Unix()
	claims, _ := json.Marshal(map[string]any{"sub": sub, "roles": []string{devices.RoleAgent}, "iat": now, "exp": now + 3600})
	msg := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(claims)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return msg + "." + enc.EncodeToString(m.Sum(nil))
}

// procKB reads a kB field of /proc/pid/status.
func procKB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func waitReady(ctx context.Context, base string) error {
	for range 600 {
		if res, err := http.Get(base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("the api did not become ready in 60 s")
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// scratchDB creates and migrates a database; drop removes it.
func scratchDB(ctx context.Context, serverURL string) (string, func(), error) {
	admin, err := sql.Open("pgx", serverURL)
	if err != nil {
		return "", nil, err
	}
	name := "uploadbench_" + hex.EncodeToString(randomBytes(6))
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("create scratch database (the role needs CREATEDB): %w", err)
	}
	drop := func() {
		_, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close()
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		drop()
		return "", nil, err
	}
	u.Path = "/" + name
	db, err := postgres.Open(ctx, postgres.Config{URL: u.String(), MaxOpenConns: 2, MaxIdleConns: 2})
	if err != nil {
		drop()
		return "", nil, err
	}
	defer db.Close()
	if err := postgres.MigrateWith(examples.MigrationsFS()...)(ctx, db); err != nil {
		drop()
		return "", nil, fmt.Errorf("migrate scratch database: %w", err)
	}
	return u.String(), drop, nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
