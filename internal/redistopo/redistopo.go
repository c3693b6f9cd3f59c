// Package redistopo starts real Redis topologies for tests: a Redis
// Cluster of three masters with one replica each, and a Sentinel setup of
// one master, one replica and three sentinels. Every process listens on
// loopback only, runs from the machine's redis-server, and is stopped by
// PID at cleanup; nothing is left behind.
package redistopo

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// waitLimit bounds each wait for a server to start, sync or promote. It is
// generous, not tight: each takes a second or two alone, and the CI box is
// a busy 2-core machine running other suites beside this one.
const waitLimit = 2 * time.Minute

// MasterName is the Sentinel master set's name.
const MasterName = "july"

// Topology is a started Redis topology.
type Topology struct {
	// URL is REDIS_URL for it: redis-cluster://... or redis-sentinel://...
	URL string
	// Nodes are the data nodes' addresses (cluster: masters then replicas;
	// sentinel: master then replica); Sentinels the sentinels'.
	Nodes     []string
	Sentinels []string
	dir       string
	procs     map[string]*exec.Cmd // address -> its redis-server
}

// Cluster starts a 3-master, 3-replica Redis Cluster.
func Cluster(t testing.TB) *Topology {
	t.Helper()
	need(t)
	tp := &Topology{dir: t.TempDir()}
	ports := freePorts(t, 6, true)
	for _, p := range ports {
		tp.start(t, p, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(tp.dir, "nodes-"+strconv.Itoa(p)+".conf"),
			"--cluster-node-timeout", "15000",
			// A killed master's replica may take over however long it was cut off
			// (the default factor refuses after a while; Kill relies on it).
			"--cluster-replica-validity-factor", "0")
		tp.Nodes = append(tp.Nodes, addr(p))
	}
	args := append([]string{"--cluster", "create"}, tp.Nodes...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(waitLimit)
	for _, n := range tp.Nodes {
		for !strings.Contains(info(t, n, "CLUSTER", "INFO"), "cluster_state:ok") {
			if time.Now().After(deadline) {
				t.Fatalf("redis cluster node %s did not reach cluster_state:ok in %s", n, waitLimit)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// cluster_state:ok says the slots are served, not that the replicas
	// hold their masters' data: a replica still in its first sync that is
	// promoted (by a failover, or by the validity factor 0 above when a
	// starved master misses node-timeout) starts empty.
	for _, n := range tp.Nodes {
		if strings.HasPrefix(info(t, n, "ROLE"), "slave") {
			waitInSync(t, n, deadline)
		}
	}
	tp.URL = "redis-cluster://" + strings.Join(tp.Nodes[:3], ",")
	return tp
}

// waitInSync waits until replica is linked to its master and no sync is
// in progress.
func waitInSync(t testing.TB, replica string, deadline time.Time) {
	t.Helper()
	for {
		out, err := probe(replica, "INFO", "replication")
		if err == nil && strings.Contains(out, "master_link_status:up") && strings.Contains(out, "master_sync_in_progress:0") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis replica %s did not sync with its master by %s:\n%s", replica, deadline.Format(time.TimeOnly), out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Sentinel starts a master, a replica of it and three sentinels watching
// it with a quorum of two and a 5 s down-after (long enough that a busy
// machine does not fail the master over by itself).
func Sentinel(t testing.TB) *Topology {
	t.Helper()
	need(t)
	tp := &Topology{dir: t.TempDir()}
	ports := freePorts(t, 5, false)
	master, replica := ports[0], ports[1]
	tp.start(t, master)
	tp.start(t, replica, "--replicaof", "127.0.0.1", strconv.Itoa(master))
	tp.Nodes = []string{addr(master), addr(replica)}
	for _, p := range ports[2:] {
		conf := filepath.Join(tp.dir, "sentinel-"+strconv.Itoa(p)+".conf")
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s 5000\nsentinel failover-timeout %s 5000\nsentinel parallel-syncs %s 1\n",
			p, tp.dir, MasterName, master, MasterName, MasterName, MasterName)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		tp.spawn(t, p, conf, "--sentinel")
		tp.Sentinels = append(tp.Sentinels, addr(p))
	}
	// Ready when the replica is in sync and every sentinel knows the replica and the other two sentinels.
	deadline := time.Now().Add(waitLimit)
	waitInSync(t, tp.Nodes[1], deadline)
	for _, s := range tp.Sentinels {
		for {
			out := info(t, s, "SENTINEL", "MASTER", MasterName)
			if strings.Contains(out, "num-slaves\n1") && strings.Contains(out, "num-other-sentinels\n2") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sentinel %s did not discover the replica and the other sentinels in %s:\n%s", s, waitLimit, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	tp.URL = "redis-sentinel://" + strings.Join(tp.Sentinels, ",") + "/0?master=" + MasterName
	return tp
}

// Master asks the sentinels which node is the master now.
func (tp *Topology) Master(t testing.TB) string {
	t.Helper()
	out := info(t, tp.Sentinels[0], "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName)
	f := strings.Fields(out)
	if len(f) != 2 {
		t.Fatalf("sentinel answered %q for the master's address", out)
	}
	return net.JoinHostPort(f[0], f[1])
}

// Failover makes the sentinels promote the replica and waits until the
// sentinels name the new master and the old master is its replica.
func (tp *Topology) Failover(t testing.TB) (oldMaster, newMaster string) {
	t.Helper()
	oldMaster = tp.Master(t)
	if out := info(t, tp.Sentinels[0], "SENTINEL", "FAILOVER", MasterName); !strings.Contains(out, "OK") {
		t.Fatalf("SENTINEL FAILOVER: %s", out)
	}
	deadline := time.Now().Add(waitLimit)
	for {
		newMaster = tp.Master(t)
		// Done when the new master leads and the old one has been turned
		// into its replica: until then the old master still takes (and
		// will drop) writes from clients that have not switched.
		newInfo, err1 := probe(newMaster, "INFO", "replication")
		oldInfo, err2 := probe(oldMaster, "INFO", "replication")
		if newMaster != oldMaster && err1 == nil && err2 == nil &&
			strings.Contains(newInfo, "role:master") && strings.Contains(oldInfo, "role:slave") {
			return oldMaster, newMaster
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sentinels did not fail %s over in %s", oldMaster, waitLimit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Do runs one command on node with redis-cli and returns its output.
func Do(t testing.TB, node string, args ...string) string {
	t.Helper()
	return info(t, node, args...)
}

func (tp *Topology) start(t testing.TB, port int, extra ...string) {
	t.Helper()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", tp.dir, "--logfile", filepath.Join(tp.dir, "redis-"+strconv.Itoa(port)+".log")}, extra...)
	tp.spawn(t, port, args...)
}

// spawn starts redis-server and stops it by PID at cleanup.
func (tp *Topology) spawn(t testing.TB, port int, args ...string) {
	t.Helper()
	cmd := exec.Command("redis-server", args...)
	// Its own process group, so stopping it stops the BGSAVE or AOF rewrite
	// child it forked, which would otherwise keep writing into tp.dir.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server on port %d: %v", port, err)
	}
	if tp.procs == nil {
		tp.procs = map[string]*exec.Cmd{}
	}
	tp.procs[addr(port)] = cmd
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr(port), 100*time.Millisecond); err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(tp.dir, "redis-"+strconv.Itoa(port)+".log"))
			t.Fatalf("redis-server on port %d did not listen in 10s:\n%s", port, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func info(t testing.TB, node string, args ...string) string {
	t.Helper()
	out, err := probe(node, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// probe is info for polling loops during a failover, when a node may reset
// the connection while it changes role: the caller asks again.
func probe(node string, args ...string) (string, error) {
	host, port, _ := net.SplitHostPort(node)
	out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("redis-cli -p %s %s: %w\n%s", port, strings.Join(args, " "), err, out)
	}
	return strings.ReplaceAll(string(out), "\r", ""), nil
}

func need(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not on PATH: the topology tests start their own Redis processes; install Debian's redis-server (scripts/ensure-services.sh does)", bin)
		}
	}
}

// freePorts finds n free loopback ports (and, for a cluster, the bus port
// 10000 above each). They come from 12000-21999 (bus ports 22000-31999),
// below Linux's ephemeral range (32768-60999): a port picked there can be
// taken by any outgoing connection of a busy machine before the server
// binds it, which made a sentinel start on a port a data node held.
func freePorts(t testing.TB, n int, bus bool) []int {
	t.Helper()
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 10_000 {
			t.Fatalf("redistopo: no %d free loopback ports in 12000-21999", n)
		}
		p := 12000 + rand.IntN(10000)
		if slices.Contains(out, p) || !free(p) || bus && !free(p+10000) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func free(p int) bool {
	l, err := net.Listen("tcp", addr(p))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func addr(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }

// Client returns a rueidis client for the topology, closed at cleanup.
func (tp *Topology) Client(t testing.TB, opt rueidis.ClientOption) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis client for %s: %v", tp.URL, err)
	}
	t.Cleanup(c.Close)
	return c
}

// ClusterFailover promotes every replica of the cluster with CLUSTER
// FAILOVER, the coordinated manual failover (the master stops taking
// writes until its replica has caught up, so no acknowledged write is
// lost), and waits until each promoted node is a master and the cluster
// is ok again. It returns the promoted nodes.
func (tp *Topology) ClusterFailover(t testing.TB) []string {
	t.Helper()
	var promoted []string
	for _, n := range tp.Nodes {
		if !strings.HasPrefix(info(t, n, "ROLE"), "slave") {
			continue
		}
		// One at a time, re-asked when it stalls: a manual failover the
		// master does not acknowledge within Redis' own 5 s (a busy machine:
		// seen failing four times in a row at a load average of 22 on two
		// cores) is dropped by Redis, and the replica stays a replica. Each
		// attempt is cheap; the test is about what the failover does, not
		// how soon a starved machine manages one.
		// A coordinated failover keeps every write only if the replica is
		// linked: one re-syncing after a load spike would be promoted with
		// what it had.
		waitInSync(t, n, time.Now().Add(waitLimit))
		const attempts = 12
		ok := false
		for attempt := 0; attempt < attempts && !ok; attempt++ {
			if out := info(t, n, "CLUSTER", "FAILOVER"); !strings.Contains(out, "OK") {
				t.Fatalf("CLUSTER FAILOVER on %s: %s", n, out)
			}
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				if strings.HasPrefix(info(t, n, "ROLE"), "master") {
					ok = true
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		if !ok {
			t.Fatalf("cluster replica %s was not promoted after %d CLUSTER FAILOVER attempts", n, attempts)
		}
		promoted = append(promoted, n)
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, n := range tp.Nodes {
		for {
			if out, err := probe(n, "CLUSTER", "INFO"); err == nil && strings.Contains(out, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s not ok 90s after the failover", n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return promoted
}

// Kill ends node's redis-server with SIGKILL: no shutdown, no last
// replication. The topology's own failure detection takes it from there.
func (tp *Topology) Kill(t testing.TB, node string) {
	t.Helper()
	cmd, ok := tp.procs[node]
	if !ok {
		t.Fatalf("redistopo: no redis-server at %s", node)
	}
	_ = cmd.Process.Kill()
	_, _ = cmd.Process.Wait()
}

// SlotMaster returns the cluster master that serves key now.
func (tp *Topology) SlotMaster(t testing.TB, key string) string {
	t.Helper()
	slot := strings.TrimSpace(info(t, tp.Nodes[0], "CLUSTER", "KEYSLOT", key))
	for _, n := range tp.Nodes {
		out, err := probe(n, "ROLE")
		if err != nil || !strings.HasPrefix(out, "master") {
			continue
		}
		k, _ := strconv.Atoi(slot)
		for line := range strings.SplitSeq(info(t, n, "CLUSTER", "NODES"), "\n") {
			f := strings.Fields(line)
			if len(f) < 9 || !strings.Contains(f[2], "myself") {
				continue
			}
			for _, r := range f[8:] { // slot ranges "a-b" or single slots
				lo, hi, found := strings.Cut(r, "-")
				if !found {
					hi = lo
				}
				a, _ := strconv.Atoi(lo)
				b, _ := strconv.Atoi(hi)
				if k >= a && k <= b {
					return n
				}
			}
		}
	}
	t.Fatalf("redistopo: no master serves slot %s of %q", slot, key)
	return ""
}
