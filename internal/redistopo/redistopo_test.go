package redistopo_test

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/july/template/internal/redistopo"
)

// A topology is ready only when its replicas hold their masters' data:
// cluster_state:ok alone came back while every replica's link was still
// down, and a failover then promoted an empty replica (the cluster drain
// test lost exactly the writes made before it).
func TestReplicasAreInSyncWhenReady(t *testing.T) {
	for name, start := range map[string]func(testing.TB) *redistopo.Topology{
		"cluster": redistopo.Cluster, "sentinel": redistopo.Sentinel,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tp := start(t)
			replicas := 0
			for _, n := range tp.Nodes {
				out := redistopo.Do(t, n, "INFO", "replication")
				if !strings.Contains(out, "role:slave") {
					continue
				}
				replicas++
				if !strings.Contains(out, "master_link_status:up") {
					t.Errorf("replica %s is not linked to its master:\n%s", n, out)
				}
			}
			if want := len(tp.Nodes) / 2; replicas != want {
				t.Fatalf("%d replicas, want %d", replicas, want)
			}
		})
	}
}

// Stopping a node stops what it forked too: a BGSAVE or AOF rewrite child
// (CONFIG SET appendonly yes starts one) outlived a SIGKILL of its parent
// and kept writing into the topology's directory, so removing it failed
// ("directory not empty") and with it the test (TestDurabilityOnTopologies
// in CI).
func TestCleanupStopsForkedChildren(t *testing.T) {
	var child int
	t.Run("topology", func(t *testing.T) {
		tp := redistopo.Sentinel(t)
		m := tp.Master(t)
		redistopo.Do(t, m, "SET", "a", "1")
		redistopo.Do(t, m, "SET", "b", "2")
		redistopo.Do(t, m, "CONFIG", "SET", "rdb-key-save-delay", "10000000") // 10 s a key: the child stays
		if out := redistopo.Do(t, m, "BGSAVE"); !strings.Contains(out, "started") {
			t.Fatalf("BGSAVE: %s", out)
		}
		var pid int
		for line := range strings.SplitSeq(redistopo.Do(t, m, "INFO", "server"), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
				pid, _ = strconv.Atoi(v)
			}
		}
		child = childOf(t, pid)
	})
	if state := procState(child); state != "" && state != "Z" {
		_ = syscall.Kill(child, syscall.SIGKILL)
		t.Fatalf("the BGSAVE child %d of the stopped master still runs (state %s)", child, state)
	}
}

// childOf returns a child process of pid, from /proc.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ")".
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			return p
		}
	}
	t.Fatalf("redis-server %d has no child (BGSAVE did not fork?)", pid)
	return 0
}

// procState is pid's state letter (R, S, Z...), or "" when it is gone.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
