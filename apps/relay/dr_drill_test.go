//go:build drdrill

package main_test

// DISASTER-RECOVERY DRILL (`make dr-drill`, docs/dr.md). A Postgres of its
// own archives its WAL with pgBackRest (deploy/postgres/archiving.conf and
// pgbackrest.conf, the repository a local directory), the api and relay
// binaries (-tags testdomain) create and apply the test domain's orders
// through it, and then:
//
//	(a) the primary's data directory is destroyed and restored to the
//	    latest archived point;
//	(b) an operator's mistaken DELETE is undone by restoring to the moment
//	    before it.
//
// Each case follows the runbook (docs/dr.md): stop the relays, restore,
// `migrate check`, start the relays, which see the restore and have the
// queue forget what it held (relay.History); the api is never restarted. Each prints the measured RPO (the
// acknowledged orders missing, and the span of time they cover) and RTO
// (from the loss to the api's /readyz 200, and to the first event
// delivered after the restore), and asserts: every order acknowledged
// before the restore point is there, every event in the restored outbox
// is delivered and none is claimed or failed, every order is applied by
// exactly one effect of its own event and each owner's effects add up to
// its orders, and no consumer failure was recorded. No relay operator
// command runs.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/apps/internal/testdomain"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/internal/pgtopo"
)

const (
	drStanza  = "main" // deploy/postgres/pgbackrest.conf's stanza
	drOwners  = 5
	drWriters = 4
	// drPace is each writer's pause between two orders: about 100 per
	// second in all, enough to keep the relays busy at every loss without
	// making the drain after it long.
	drPace = 30 * time.Millisecond
	// drAtRisk is how long the writers go on after the last WAL segment
	// the drill made sure was archived, before the loss in case (a): half
	// of archiving.conf's archive_timeout, so the loss lands inside the
	// window the archive does not hold yet, where a real one would.
	drAtRisk = 15 * time.Second
	// drBallastRows fills a table of about 130 MB before the first backup,
	// so the restore rate is measured on more than the cluster's empty
	// catalogue (about 25 MB, where fixed costs dominate). The drill's
	// budget in make ci bounds it.
	drBallastRows = 1_000_000
)

// ack is one order the api acknowledged (201).
type ack struct {
	id, owner string
	amount    int64
	at        time.Time
}

type drill struct {
	t      *testing.T
	srv    *pgtopo.Server
	bin    string // pgbackrest
	conf   string // the drill's pgbackrest.conf
	red    *testinfra.RedisProc
	w      *world
	api    string
	tokens []string
	relays []*relayProc
	seq    atomic.Int64

	lost map[string]bool // orders an earlier case's restore took back

	mu    sync.Mutex
	acked []ack
	fails int // requests not acknowledged (during the outages)
}

func TestDRDrill(t *testing.T) {
	d := newDrill(t)
	d.backup("full")
	d.startServices()

	a := d.caseLatest()
	d.backup("full") // the runbook: a new full backup right after a restore
	b := d.casePointInTime()

	t.Logf("DR DRILL SUMMARY (archive_timeout %s, %d writers, at most %d orders/s)", d.archiveTimeout(), drWriters, int(float64(drWriters)/drPace.Seconds()))
	for _, r := range []drResult{a, b} {
		t.Logf("  %s", r)
	}
}

// newDrill starts the primary with archiving, the repository, a private
// Redis with AOF (the production setting) and migrates the database with
// the migrate binary (the release step).
func newDrill(t *testing.T) *drill {
	t.Helper()
	bin, err := exec.LookPath("pgbackrest")
	require.NoError(t, err, "pgbackrest is not installed: `make dr-drill` installs it (scripts/pgbackrest.sh ensure)")
	archiving, err := os.ReadFile("../../deploy/postgres/archiving.conf")
	require.NoError(t, err)

	d := &drill{t: t, bin: bin, lost: map[string]bool{}}
	// archive_command names the drill's pgbackrest.conf by path, and that
	// config names the server's directories, which exist once it started:
	// the server starts with archiving failing (PostgreSQL keeps the
	// segments and retries) until the config is written just after.
	cfgDir, err := os.MkdirTemp("", "dr-drill-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(cfgDir) })
	d.conf = filepath.Join(cfgDir, "pgbackrest.conf")
	conf := strings.ReplaceAll(string(archiving), "pgbackrest --stanza=", bin+" --config="+d.conf+" --stanza=")
	require.Contains(t, conf, "--config="+d.conf, "archiving.conf's archive_command runs pgbackrest --stanza=...")
	d.srv = pgtopo.StartServer(t, conf+"fsync = off\n")
	if os.Geteuid() == 0 {
		require.NoError(t, exec.Command("chown", "-R", "postgres", cfgDir).Run())
	}
	d.writeConf(t)
	d.pgbackrest("stanza-create")
	d.pgbackrest("check") // forces a segment switch and waits until it is archived

	red := testinfra.StartRedisProc(t, "--appendonly", "yes", "--appendfsync", "everysec")
	d.red = red
	c := exec.Command(migrateBin(t), "up")
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + d.srv.URL}
	out, err := c.CombinedOutput()
	require.NoError(t, err, "migrate up:\n%s", out)
	d.w = &world{t: t, redisURL: red.URL, queue: "dr_drill"}
	d.openDB()
	_, err = d.w.db.Bun.ExecContext(t.Context(), `CREATE TABLE dr_ballast AS
		SELECT g AS id, md5(g::text) || md5((g * 7)::text) AS pad FROM generate_series(1, ?) g`, drBallastRows)
	require.NoError(t, err, "fill the ballast table")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (tail):\n%s", tail(d.srv.Log(t), 6000))
		}
	})
	return d
}

// writeConf writes the drill's pgbackrest.conf: the [global] options of
// deploy/postgres/pgbackrest.conf, with the repository a local directory
// beside (not inside) the data directory and secrets of its own.
func (d *drill) writeConf(t *testing.T) {
	t.Helper()
	f, err := os.Open("../../deploy/postgres/pgbackrest.conf")
	require.NoError(t, err)
	defer f.Close()
	local := map[string]bool{"repo1-type": true, "repo1-path": true, "spool-path": true, "log-path": true,
		"repo1-s3-bucket": true, "repo1-s3-endpoint": true, "repo1-s3-region": true, "log-level-console": true}
	var b strings.Builder
	b.WriteString("[global]\n")
	section, kept := "", 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = line
			if section != "[global]" {
				require.Equal(t, "["+drStanza+"]", section, "deploy/postgres/pgbackrest.conf's stanza is the one archiving.conf and the runbook name")
			}
			continue
		}
		key, _, _ := strings.Cut(line, "=")
		if section == "[global]" && !local[key] {
			b.WriteString(line + "\n")
			kept++
		}
	}
	require.NoError(t, sc.Err())
	require.Contains(t, b.String(), "repo1-cipher-type=aes-256-cbc", "the deploy config encrypts the repository")
	for _, dir := range []string{"repo", "spool", "log", "lock"} {
		d.srv.Mkdir(t, filepath.Join(d.srv.Dir, dir))
	}
	pass := make([]byte, 24)
	_, _ = rand.Read(pass)
	fmt.Fprintf(&b, "repo1-path=%s/repo\nspool-path=%s/spool\nlog-path=%s/log\nlock-path=%s/lock\nrepo1-cipher-pass=%s\nlog-level-console=warn\n\n[%s]\npg1-path=%s\npg1-port=%d\npg1-socket-path=%s\npg1-user=postgres\n",
		d.srv.Dir, d.srv.Dir, d.srv.Dir, d.srv.Dir, hex.EncodeToString(pass), drStanza, d.srv.DataDir, d.srv.Port, d.srv.Dir)
	d.srv.WriteFile(t, d.conf, b.String())
	t.Logf("pgbackrest.conf: %d [global] options from deploy/postgres/pgbackrest.conf, repository %s/repo (the data directory is %s)", kept, d.srv.Dir, d.srv.DataDir)
}

// pgbackrest runs a pgBackRest command as the server's user.
func (d *drill) pgbackrest(args ...string) string {
	d.t.Helper()
	return d.srv.Run(d.t, d.bin, append([]string{"--config=" + d.conf, "--stanza=" + drStanza}, args...)...)
}

func (d *drill) archiveTimeout() string {
	return strings.TrimSpace(d.srv.Psql(d.t, "SHOW archive_timeout"))
}

// openDB (re)opens the test's own connection pool on the server.
func (d *drill) openDB() {
	d.t.Helper()
	if d.w.db != nil {
		_ = d.w.db.Bun.Close()
	}
	bdb, err := testinfra.OpenBun(d.srv.URL)
	require.NoError(d.t, err)
	d.t.Cleanup(func() { _ = bdb.Close() })
	store, err := pgoutbox.NewStore(bdb, pgoutbox.Config{})
	require.NoError(d.t, err)
	d.w.db, d.w.store = &testinfra.DB{Name: "postgres", URL: d.srv.URL, Bun: bdb}, store
}

// backup takes a backup of the given type and logs its duration and size.
func (d *drill) backup(kind string) {
	d.t.Helper()
	start := time.Now()
	d.pgbackrest("--type="+kind, "backup")
	info := d.lastBackup()
	d.t.Logf("pgbackrest %s backup %s: %s, database %.1f MB, repository %.1f MB (lz4, aes-256-cbc)",
		kind, info.Label, time.Since(start).Round(time.Millisecond), mb(info.Info.Size), mb(info.Info.Repository.Size))
}

type backupInfo struct {
	Label string `json:"label"`
	Info  struct {
		Size       int64 `json:"size"`
		Repository struct {
			Size int64 `json:"size"`
		} `json:"repository"`
	} `json:"info"`
}

func (d *drill) lastBackup() backupInfo {
	d.t.Helper()
	var stanzas []struct {
		Backup []backupInfo `json:"backup"`
	}
	out := d.pgbackrest("info", "--output=json")
	require.NoError(d.t, json.Unmarshal([]byte(out), &stanzas), "pgbackrest info: %s", out)
	require.NotEmpty(d.t, stanzas)
	require.NotEmpty(d.t, stanzas[0].Backup, "pgbackrest info lists no backup")
	return stanzas[0].Backup[len(stanzas[0].Backup)-1]
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// startServices runs the api (for the whole drill: it is never restarted)
// and two relays with their workers (the test domain's td-apply).
func (d *drill) startServices() {
	d.t.Helper()
	secret := "dr-drill-secret-0123456789abcdef-0123456789"
	d.api = startAPIBin(d.t, d.w, secret)
	d.tokens = writerTokens(d.t, secret, drOwners)
	d.startRelays()
}

var drRelayEnv = []string{"WORKER_ENABLED=true", "WORKER_CONCURRENCY=4"}

func (d *drill) startRelays() {
	d.t.Helper()
	gen := len(d.relays)
	d.relays = append(d.relays, d.w.startRelay(fmt.Sprintf("relay-%d-a", gen), drRelayEnv...),
		d.w.startRelay(fmt.Sprintf("relay-%d-b", gen), drRelayEnv...))
}

// stopRelays is the runbook's first step: SIGTERM, and SIGKILL for a relay
// still draining after 30 s (its database is gone; what it held is
// recovered from the restored rows, not from it).
func (d *drill) stopRelays() {
	d.t.Helper()
	for _, p := range d.relays {
		if p.exited() {
			continue
		}
		require.NoError(d.t, p.cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			d.t.Logf("relay %s still stopping 30 s after SIGTERM; killed", p.name)
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// write runs the writers until stop is closed; each acknowledged order
// is recorded. A request that fails is not retried: its order was not
// acknowledged, so the restore owes it nothing.
func (d *drill) write(stop <-chan struct{}) (wait func()) {
	var wg sync.WaitGroup
	for range drWriters {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(drPace):
				}
				n := d.seq.Add(1)
				res, err := postOrder(d.api, d.tokens[int(n)%drOwners], fmt.Sprintf("dr-%06d", n), 100+n)
				at := time.Now()
				if err != nil || res.Status != http.StatusCreated {
					d.mu.Lock()
					d.fails++
					d.mu.Unlock()
					continue
				}
				var v testdomain.OrderView
				if json.Unmarshal([]byte(res.Body), &v) != nil || v.OrderID == "" {
					d.mu.Lock()
					d.fails++
					d.mu.Unlock()
					continue
				}
				d.mu.Lock()
				d.acked = append(d.acked, ack{id: v.OrderID, owner: v.Owner, amount: v.Amount, at: at})
				d.mu.Unlock()
			}
		})
	}
	return wg.Wait
}

// writing starts the writers and returns a function that stops them.
func (d *drill) writing() (stop func()) {
	ch := make(chan struct{})
	wait := d.write(ch)
	return func() { close(ch); wait() }
}

func (d *drill) ackCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.acked)
}

func (d *drill) ackedSnapshot() []ack {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]ack(nil), d.acked...)
}

// waitAcks waits until n more orders than now are acknowledged.
func (d *drill) waitAcks(n int) {
	d.t.Helper()
	want := d.ackCount() + n
	waitProgress(d.t, "the writers' orders are acknowledged", stallLimit, false, func() (int, bool, string) {
		got := d.ackCount()
		return got, got >= want, fmt.Sprintf("%d acknowledged, want %d", got, want)
	})
}

// archived switches to a new WAL segment and waits until the archiver has
// stored it: every commit acknowledged before the call is in the
// repository when it returns.
func (d *drill) archived() {
	d.t.Helper()
	var seg string
	require.NoError(d.t, d.w.db.Bun.QueryRowContext(d.t.Context(), "SELECT pg_walfile_name(pg_switch_wal())").Scan(&seg))
	waitProgress(d.t, "the archiver stores WAL segment "+seg, stallLimit, false, func() (int, bool, string) {
		var last string
		var failed int
		_ = d.w.db.Bun.QueryRowContext(d.t.Context(), "SELECT coalesce(last_archived_wal, ''), failed_count FROM pg_stat_archiver").Scan(&last, &failed)
		return failed, last >= seg, fmt.Sprintf("last archived %q, %d failures (server log tail: %s)", last, failed, tail(d.srv.Log(d.t), 400))
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// readiness polls the api's /readyz from now on and reports when it
// first answers 200 after having answered anything else.
func (d *drill) readiness() (first func() time.Time) {
	var mu sync.Mutex
	var down bool
	var at time.Time
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			res, err := apitest.Send(context.Background(), d.api, apitest.Request{Method: http.MethodGet, Path: "/readyz"})
			ok := err == nil && res.Status == http.StatusOK
			mu.Lock()
			if !ok {
				down = true
			} else if down && at.IsZero() {
				at = time.Now()
			}
			mu.Unlock()
		}
	}()
	d.t.Cleanup(func() { close(stop) })
	return func() time.Time {
		d.t.Helper()
		waitProgress(d.t, "the api's /readyz answers 200 after the restore", stallLimit, false, func() (int, bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return 0, !at.IsZero(), fmt.Sprintf("down seen: %v", down)
		})
		mu.Lock()
		defer mu.Unlock()
		return at
	}
}

// restore runs the runbook from a stopped server to relays running: the
// restore itself (pgbackrest args), the server's start and recovery,
// `migrate check`, the relays. The api stays up.
func (d *drill) restore(r *drResult, args ...string) {
	d.t.Helper()
	d.srv.Mkdir(d.t, d.srv.DataDir)
	start := time.Now()
	d.pgbackrest(append(args, "restore")...)
	r.restoreFiles = time.Since(start)
	r.size = d.lastBackup().Info.Size
	start = time.Now()
	d.srv.Start(d.t)
	d.srv.Primary(d.t)
	r.recovery = time.Since(start)
	d.openDB()

	c := exec.Command(migrateBin(d.t), "check")
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + d.srv.URL}
	out, err := c.CombinedOutput()
	require.NoError(d.t, err, "migrate check on the restored database:\n%s", out)
	w := d.w
	r.left = fmt.Sprintf("%d events pending, %d claimed (delivering), %d delivered of which %d unconsumed; %d orders not applied",
		w.count("SELECT count(*) FROM tb_outbox_event WHERE status = 1"), w.count("SELECT count(*) FROM tb_outbox_event WHERE status = 2"),
		w.count("SELECT count(*) FROM tb_outbox_event WHERE status = 3"),
		w.count(`SELECT count(*) FROM tb_outbox_event e WHERE status = 3 AND NOT EXISTS (SELECT 1 FROM tb_outbox_consumption c WHERE c.event_id = e.event_id)`),
		w.count("SELECT count(*) FROM td_order WHERE status <> ?", testdomain.StatusApplied))

	// What Redis holds is ahead of the restored database: queue items for
	// events the restore took back, completed items whose consumer effects
	// it rolled back (a re-publish under the same event_id would be
	// absorbed and never run). No one deletes it: the relays see the new
	// timeline before their worker starts (relay.History), have the queue
	// forget its tasks, and publish the pending events and reconcile the
	// delivered, unconsumed ones from Postgres.
	d.startRelays()
}

// drResult is one case's measurements.
type drResult struct {
	name                               string
	lostRows, ackedBefore              int
	lostSpan                           time.Duration // committed work missing, as time
	stopRelays                         time.Duration // the runbook's first step
	restoreFiles, recovery             time.Duration // pgbackrest restore; start to accepting writes
	size                               int64         // database size of the backup restored
	toReady, toDelivered, toAllApplied time.Duration // from the loss
	redelivered                        int           // restored events the new relays delivered
	left                               string        // what the restore left in flight
	toAllDelivered                     time.Duration
}

func (r drResult) String() string {
	rate := mb(r.size) / r.restoreFiles.Seconds()
	return fmt.Sprintf("%s: RPO %d acknowledged orders missing of %d (%s of committed work); RTO /readyz 200 %s, first delivered event %s, every order applied %s after the loss; pgbackrest restore %s for %.1f MB (%.1f MB/s, ~%.0f s per GB at that rate), recovery to accepting writes %s, relays stopped in %s; the restore left %s; %d of those events delivered by the new relays, every event delivered %s after the loss",
		r.name, r.lostRows, r.ackedBefore, r.lostSpan.Round(10*time.Millisecond), r.toReady.Round(10*time.Millisecond),
		r.toDelivered.Round(10*time.Millisecond), r.toAllApplied.Round(10*time.Millisecond),
		r.restoreFiles.Round(10*time.Millisecond), mb(r.size), rate, 1024/rate, r.recovery.Round(10*time.Millisecond),
		r.stopRelays.Round(10*time.Millisecond), r.left, r.redelivered, r.toAllDelivered.Round(10*time.Millisecond))
}

// caseLatest: the primary's data directory is destroyed under load and
// restored to the latest point the archive holds.
func (d *drill) caseLatest() drResult {
	d.t.Helper()
	r := drResult{name: "(a) data directory lost, restored to the latest archived point"}
	stop := d.writing()
	d.waitAcks(300)
	cut := d.ackCount() // each of these committed before the switch below: in the archive once it returns
	d.archived()
	time.Sleep(drAtRisk)
	ready := d.readiness()

	loss := time.Now()
	d.srv.Kill(d.t)
	require.NoError(d.t, os.RemoveAll(d.srv.DataDir), "destroy the data directory")
	stop()
	start := time.Now()
	d.stopRelays()
	r.stopRelays = time.Since(start)

	d.restore(&r) // the default type: to the end of the archived WAL
	acked := d.ackedSnapshot()
	d.measure(&r, loss, acked, cut, ready)
	d.t.Logf("%s", r)
	return r
}

// casePointInTime: an operator deletes every effect the consumer recorded;
// the database is restored to the moment before the DELETE.
func (d *drill) casePointInTime() drResult {
	d.t.Helper()
	r := drResult{name: "(b) mistaken DELETE, restored to the time before it"}
	stop := d.writing()
	d.waitAcks(300)
	cut := d.ackCount()
	var target string
	require.NoError(d.t, d.w.db.Bun.QueryRowContext(d.t.Context(), "SELECT clock_timestamp()::text").Scan(&target))
	targetAt := time.Now()
	var deleted []string
	require.NoError(d.t, d.w.db.Bun.NewRaw("DELETE FROM td_effect RETURNING order_id").Scan(d.t.Context(), &deleted), "the operator's mistake")
	gone := len(deleted)
	require.Positive(d.t, gone, "the mistake deleted effects")
	d.waitAcks(100) // the service goes on until someone notices
	ready := d.readiness()

	// Noticed: the service goes down for the restore. The primary is
	// alive, so its last segment is archived before it stops (the target
	// lies in it), and its data directory is kept aside, not deleted.
	loss := time.Now()
	stop()
	start := time.Now()
	d.stopRelays()
	r.stopRelays = time.Since(start)
	d.archived()
	d.srv.Stop(d.t)
	aside := d.srv.DataDir + ".mistake"
	require.NoError(d.t, os.Rename(d.srv.DataDir, aside))
	d.t.Cleanup(func() { _ = os.RemoveAll(aside) })

	d.restore(&r, "--type=time", "--target="+target, "--target-action=promote")
	acked := d.ackedSnapshot()
	d.measure(&r, loss, acked, cut, ready)
	r.lostSpan = loss.Sub(targetAt) // everything after the target is given up
	back := d.w.count("SELECT count(*) FROM td_effect WHERE order_id = ANY(?)", pgdialect.Array(deleted))
	require.Positive(d.t, back, "the deleted effects are back")
	require.Equal(d.t, d.w.count("SELECT count(*) FROM td_order WHERE id = ANY(?)", pgdialect.Array(deleted)), back,
		"every order whose effect the mistake deleted has it again")
	d.t.Logf("%s (%d effects deleted by the mistake, %d back: the others were of orders after the target; restored to %s)", r, gone, back, target)
	return r
}

// measure waits for the service to drain after a restore and checks the
// outbox and the consumers' effects. The first cut acknowledgements must
// all be there.
func (d *drill) measure(r *drResult, loss time.Time, acked []ack, cut int, ready func() time.Time) {
	d.t.Helper()
	w := d.w
	// Traffic returns at once; every order in the database, old and new,
	// ends applied once.
	stop := d.writing()
	// The first event delivered after the restore.
	var first time.Time
	waitProgress(d.t, "an event is delivered after the restore", stallLimit, false, func() (int, bool, string) {
		var at *time.Time
		_ = w.db.Bun.QueryRowContext(d.t.Context(), "SELECT min(delivered_at) FROM tb_outbox_event WHERE delivered_at > ?", loss).Scan(&at)
		if at != nil {
			first = *at
		}
		return 0, at != nil, "none yet"
	})
	r.toDelivered = first.Sub(loss)
	r.toReady = ready().Sub(loss)

	d.waitAcks(100)
	stop()
	w.waitCountProgress(0, "SELECT count(*) FROM tb_outbox_event WHERE status <> 3")
	r.toAllDelivered = time.Since(loss)
	w.waitCountProgress(0, "SELECT count(*) FROM td_order WHERE status <> ?", testdomain.StatusApplied)
	r.toAllApplied = time.Since(loss)
	w.waitQueueRan()

	present := map[string]bool{}
	var ids []string
	require.NoError(d.t, w.db.Bun.NewRaw("SELECT id FROM td_order").Scan(d.t.Context(), &ids))
	for _, id := range ids {
		present[id] = true
	}
	var missing []ack
	for i, a := range acked {
		if present[a.id] || d.lost[a.id] {
			continue
		}
		require.GreaterOrEqual(d.t, i, cut, "order %s, acknowledged before the restore point, is missing", a.id)
		missing = append(missing, a)
		d.lost[a.id] = true
	}
	r.lostRows, r.ackedBefore = len(missing), len(acked)
	for _, m := range missing {
		r.lostSpan = max(r.lostSpan, loss.Sub(m.at))
	}

	require.Zero(d.t, w.count("SELECT count(*) FROM tb_outbox_event WHERE lease_owner IS NOT NULL AND status = 2"), "no event is left claimed")
	var orders []testdomain.OrderView
	require.NoError(d.t, w.db.Bun.NewRaw("SELECT id AS order_id, owner, amount FROM td_order").Scan(d.t.Context(), &orders))
	requireAppliedOnce(d.t, w, orders) // and no consumer failure was recorded
	r.redelivered = w.count(`SELECT count(*) FROM tb_outbox_event WHERE created_at < ? AND delivered_at > ?`, loss, loss)
	d.mu.Lock()
	d.t.Logf("%d requests not acknowledged so far (during the outages)", d.fails)
	d.mu.Unlock()
}
