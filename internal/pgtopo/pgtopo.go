// Package pgtopo starts a Postgres primary with a streaming standby for
// failover tests, from the machine's PostgreSQL binaries: initdb, a
// pg_basebackup -R standby replicating synchronously, both on loopback ports, run as the postgres
// user when the test runs as root, and stopped by pg_ctl at cleanup.
package pgtopo

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitLimit bounds each wait for a server to start, sync or promote. It is
// generous, not tight: each takes a second or two alone, and the CI box is
// a busy 2-core machine running other suites beside this one.
const waitLimit = 2 * time.Minute

// Pair is a primary and its standby.
type Pair struct {
	// URL names both hosts with target_session_attrs=read-write: pgx
	// connects to whichever accepts writes, as a production DATABASE_URL
	// for a failover setup does.
	URL string
	// Primary and Standby are host:port.
	Primary, Standby string
	bin, dir         string
	primaryDir       string
	standbyDir       string
}

// Start initialises and starts the pair and waits until the standby
// streams from the primary.
func Start(t testing.TB) *Pair {
	t.Helper()
	bin := binDir(t)
	dir, err := os.MkdirTemp("", "pgtopo-")
	if err != nil {
		t.Fatal(err)
	}
	p := &Pair{bin: bin, dir: dir, primaryDir: filepath.Join(dir, "primary"), standbyDir: filepath.Join(dir, "standby")}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	chownToPostgres(t, dir)
	ports := freePorts(t, 2)
	p.Primary, p.Standby = "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])

	p.run(t, "initdb", "-D", p.primaryDir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	conf := "listen_addresses = '127.0.0.1'\nunix_socket_directories = '" + dir + "'\nwal_level = replica\n" +
		"max_wal_senders = 5\nhot_standby = on\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n" +
		"max_connections = 100\nshared_buffers = 32MB\n"
	appendFile(t, filepath.Join(p.primaryDir, "postgresql.auto.conf"), conf)
	p.start(t, p.primaryDir, ports[0])
	t.Cleanup(func() { p.stop(p.primaryDir) })

	p.run(t, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(ports[0]), "-U", "postgres", "-D", p.standbyDir, "-R", "-X", "stream", "--no-sync")
	p.start(t, p.standbyDir, ports[1])
	t.Cleanup(func() { p.stop(p.standbyDir) })

	p.URL = fmt.Sprintf("postgres://postgres@%s,%s/postgres?sslmode=disable&target_session_attrs=read-write", p.Primary, p.Standby)
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(p.psql(t, p.Primary, "SELECT state FROM pg_stat_replication"), "streaming") {
		if time.Now().After(deadline) {
			t.Fatalf("the standby did not start streaming in %s", waitLimit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// From here the primary replicates synchronously: a commit returns once
	// the standby has flushed it, so a failover loses no acknowledged
	// commit. With asynchronous replication the last commits vanish with
	// the primary, a consumer's effect among them after its queue item was
	// acknowledged, and the failover tests, which assert that nothing is
	// lost, would fail now and then (seen: 2983 of 3000 consumed, for
	// good). Only the primary's config says so: the promoted standby keeps
	// committing alone.
	appendFile(t, filepath.Join(p.primaryDir, "postgresql.auto.conf"), "synchronous_standby_names = '*'\nsynchronous_commit = on\n")
	p.run(t, "pg_ctl", "-D", p.primaryDir, "reload")
	for strings.TrimSpace(p.psql(t, p.Primary, "SELECT sync_state FROM pg_stat_replication")) != "sync" {
		if time.Now().After(deadline) {
			t.Fatalf("the standby did not become synchronous in %s", waitLimit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

// CaughtUp waits until the standby has replayed everything the primary
// has logged so far: the insert position, not the write position, which
// with synchronous_commit = off can still lag behind a commit.
func (p *Pair) CaughtUp(t testing.TB) {
	t.Helper()
	lsn := strings.TrimSpace(p.psql(t, p.Primary, "SELECT pg_current_wal_insert_lsn()"))
	deadline := time.Now().Add(waitLimit)
	for strings.TrimSpace(p.psql(t, p.Standby, "SELECT pg_last_wal_replay_lsn() >= '"+lsn+"'::pg_lsn")) != "t" {
		if time.Now().After(deadline) {
			t.Fatalf("the standby did not replay up to %s in %s", lsn, waitLimit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Failover stops the primary at once (as a crash would) and promotes the
// standby, returning when it accepts writes: Kill, then Promote.
func (p *Pair) Failover(t testing.TB) {
	t.Helper()
	p.Kill(t)
	p.Promote(t)
}

// Kill stops the primary at once, as a crash would; it returns when the
// primary is gone. Tests that time the outage from the crash call Kill
// and Promote themselves.
func (p *Pair) Kill(t testing.TB) {
	t.Helper()
	p.run(t, "pg_ctl", "-D", p.primaryDir, "stop", "-m", "immediate", "-w")
}

// Promote promotes the standby, returning when it accepts writes.
func (p *Pair) Promote(t testing.TB) {
	t.Helper()
	p.run(t, "pg_ctl", "-D", p.standbyDir, "promote", "-w")
	deadline := time.Now().Add(waitLimit)
	for strings.TrimSpace(p.psql(t, p.Standby, "SELECT pg_is_in_recovery()")) != "f" {
		if time.Now().After(deadline) {
			t.Fatalf("the promoted standby still in recovery after %s", waitLimit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *Pair) start(t testing.TB, dataDir string, port int) {
	t.Helper()
	p.run(t, "pg_ctl", "-D", dataDir, "-l", dataDir+".log", "-o", "-p "+strconv.Itoa(port), "start", "-w", "-t", "60")
}

func (p *Pair) stop(dataDir string) {
	_ = p.command("pg_ctl", "-D", dataDir, "stop", "-m", "immediate", "-w").Run()
}

func (p *Pair) psql(t testing.TB, hostport, sql string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(hostport)
	out, err := exec.Command(filepath.Join(p.bin, "psql"), "-h", host, "-p", port, "-U", "postgres", "-d", "postgres", "-XAtc", sql).CombinedOutput()
	if err != nil {
		return "" // not up (yet, or any more): the callers poll
	}
	return string(out)
}

func (p *Pair) run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := p.command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// command runs a PostgreSQL binary, as the postgres user when we are
// root (initdb and postgres refuse to run as root).
func (p *Pair) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(p.bin, name)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func binDir(t testing.TB) string {
	t.Helper()
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); fileExists(filepath.Join(d, "initdb")) {
			return d
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		t.Fatalf("no initdb found: the failover tests start their own Postgres; install Debian's postgresql (scripts/ensure-services.sh does)")
	}
	return filepath.Dir(matches[len(matches)-1])
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func chownToPostgres(t testing.TB, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root needs the postgres user to run initdb: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// freePorts picks n free ports below the ephemeral range (20000-29999).
// Not from port 0: once the primary is stopped its port is free again, and
// another test's server taking an ephemeral port could land on it; pgx
// would then reach that server through the multi-host URL.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			t.Fatal("no free port in 20000-29999")
		}
		p := 20000 + rand.IntN(10000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		_ = l.Close()
		out = append(out, p)
	}
	return out
}

// PrimaryLog returns what the primary has written to its server log so far.
func (p *Pair) PrimaryLog(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(p.primaryDir + ".log")
	if err != nil {
		t.Fatalf("read the primary's server log: %v", err)
	}
	return string(b)
}
