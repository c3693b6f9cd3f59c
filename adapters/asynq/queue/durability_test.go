package queue_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/redisurl"
	"github.com/july/template/internal/redistopo"
)

// checkTimeout bounds one CheckDurability call in these tests; a healthy
// local Redis answers in milliseconds.
const checkTimeout = 10 * time.Second

func checkDurability(t *testing.T, redisURL string) queue.Durability {
	t.Helper()
	topo, err := redisurl.Parse(redisURL)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
	defer cancel()
	d, err := queue.CheckDurability(ctx, queue.ConnOpt(topo), "q_"+uuid.NewString()[:8])
	require.NoError(t, err)
	return d
}

// redisCLI runs one command on a private redis-server with redis-cli.
func redisCLI(t *testing.T, rp *testinfra.RedisProc, args ...string) string {
	t.Helper()
	return redistopo.Do(t, "127.0.0.1:"+strconv.Itoa(rp.Port), args...)
}

func TestDurability(t *testing.T) {
	t.Parallel()

	t.Run("EvictionAndNoPersistence", func(t *testing.T) {
		t.Parallel()
		rp := testinfra.StartRedisProc(t, "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru")
		d := checkDurability(t, rp.URL)
		require.Equal(t, queue.SourceConfig, d.Source, "CONFIG GET works here: %+v", d)
		require.Empty(t, d.ConfigError)
		require.Equal(t, []queue.Risk{queue.RiskEvictionPolicy, queue.RiskNoPersistence}, d.Risks, "%+v", d)
		require.EqualValues(t, 10<<20, d.MaxMemory)
		require.Equal(t, "allkeys-lru", d.MaxMemoryPolicy)
		require.False(t, d.AppendOnly)
		require.Empty(t, d.Save)
		require.Equal(t, "master", d.Role)
		require.Equal(t, "single", d.Topology)
		require.Empty(t, d.Unknown)
	})

	t.Run("AOFEverysecNoevictionHasNoRisk", func(t *testing.T) {
		t.Parallel()
		rp := testinfra.StartRedisProc(t, "--appendonly", "yes", "--appendfsync", "everysec",
			"--maxmemory", "10mb", "--maxmemory-policy", "noeviction")
		d := checkDurability(t, rp.URL)
		require.Equal(t, queue.SourceConfig, d.Source)
		require.Empty(t, d.Risks, "%+v", d)
		require.True(t, d.AppendOnly)
		require.Equal(t, "everysec", d.AppendFsync)
		require.Equal(t, "noeviction", d.MaxMemoryPolicy)
		require.Equal(t, 0, d.MinReplicasToWrite)
	})

	// With maxmemory 0 there is no limit, so no policy evicts anything.
	t.Run("NoMaxmemoryNoEviction", func(t *testing.T) {
		t.Parallel()
		rp := testinfra.StartRedisProc(t, "--maxmemory", "0", "--maxmemory-policy", "allkeys-lru", "--appendonly", "yes")
		d := checkDurability(t, rp.URL)
		require.Empty(t, d.Risks, "%+v", d)
		require.Equal(t, "allkeys-lru", d.MaxMemoryPolicy)
	})

	// Each setting turns its risk on and off on one live server.
	t.Run("SettingsAtRuntime", func(t *testing.T) {
		t.Parallel()
		rp := testinfra.StartRedisProc(t)
		require.Equal(t, []queue.Risk{queue.RiskNoPersistence}, checkDurability(t, rp.URL).Risks)
		for _, step := range []struct {
			set  []string
			want []queue.Risk
		}{
			{[]string{"save", "3600 1 300 100"}, []queue.Risk{queue.RiskRDBOnly}},
			{[]string{"appendonly", "yes"}, nil},
			{[]string{"appendfsync", "no"}, []queue.Risk{queue.RiskAOFFsyncLax}},
			{[]string{"appendfsync", "always"}, nil},
			{[]string{"maxmemory", "100mb"}, nil}, // noeviction is the default
			{[]string{"maxmemory-policy", "volatile-lru"}, []queue.Risk{queue.RiskEvictionPolicy}},
			{[]string{"appendonly", "no"}, []queue.Risk{queue.RiskEvictionPolicy, queue.RiskRDBOnly}},
			{[]string{"save", ""}, []queue.Risk{queue.RiskEvictionPolicy, queue.RiskNoPersistence}},
		} {
			require.Equal(t, "OK", strings.TrimSpace(redisCLI(t, rp, append([]string{"CONFIG", "SET"}, step.set...)...)), "CONFIG SET %q", step.set)
			d := checkDurability(t, rp.URL)
			require.Equal(t, step.want, d.Risks, "after CONFIG SET %q: %+v", step.set, d)
		}
	})

	// Managed Redis often renames or disables CONFIG: INFO still shows the
	// eviction policy and whether AOF is on.
	t.Run("ConfigDisabledFallsBackToInfo", func(t *testing.T) {
		t.Parallel()
		rp := testinfra.StartRedisProc(t, "--rename-command", "CONFIG", "", "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru")
		require.Contains(t, redisCLI(t, rp, "CONFIG", "GET", "maxmemory"), "unknown command", "CONFIG is disabled")
		d := checkDurability(t, rp.URL)
		require.Equal(t, queue.SourceInfo, d.Source, "%+v", d)
		require.Contains(t, d.ConfigError, "unknown command")
		require.Equal(t, "allkeys-lru", d.MaxMemoryPolicy)
		require.EqualValues(t, 10<<20, d.MaxMemory)
		require.Equal(t, []queue.Risk{queue.RiskEvictionPolicy, queue.RiskNoPersistence}, d.Risks, "%+v", d)
		require.Equal(t, []string{"appendfsync", "save", "min-replicas-to-write"}, d.Unknown)

		// INFO shows AOF; without appendfsync it reports no fsync risk.
		aof := testinfra.StartRedisProc(t, "--rename-command", "CONFIG", "", "--appendonly", "yes", "--appendfsync", "no")
		d = checkDurability(t, aof.URL)
		require.Equal(t, queue.SourceInfo, d.Source)
		require.True(t, d.AppendOnly)
		require.Empty(t, d.Risks, "appendfsync is unknown without CONFIG: %+v", d)

		// Without CONFIG, a snapshot since the start is the sign of save points.
		rdb := testinfra.StartRedisProc(t, "--rename-command", "CONFIG", "")
		require.Equal(t, []queue.Risk{queue.RiskNoPersistence}, checkDurability(t, rdb.URL).Risks)
		require.Equal(t, "OK", strings.TrimSpace(redisCLI(t, rdb, "SAVE")))
		d = checkDurability(t, rdb.URL)
		require.EqualValues(t, 1, d.RDBSaves)
		require.Equal(t, []queue.Risk{queue.RiskRDBOnly}, d.Risks, "%+v", d)
	})

	// INFO refused, CONFIG still answers: everything but the role is known.
	// Both refused: nothing is known, which is an error (check_up 0).
	t.Run("InfoRefused", func(t *testing.T) {
		t.Parallel()
		rp := testinfra.StartRedisProc(t, "--rename-command", "INFO", "", "--appendonly", "yes")
		d := checkDurability(t, rp.URL)
		require.Equal(t, queue.SourceConfig, d.Source)
		require.Equal(t, []string{"role"}, d.Unknown)
		require.Empty(t, d.Risks, "%+v", d)

		none := testinfra.StartRedisProc(t, "--rename-command", "INFO", "", "--rename-command", "CONFIG", "")
		topo, err := redisurl.Parse(none.URL)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
		defer cancel()
		_, err = queue.CheckDurability(ctx, queue.ConnOpt(topo), "q")
		require.ErrorContains(t, err, "refuses both CONFIG")
	})

	t.Run("Replica", func(t *testing.T) {
		t.Parallel()
		master := testinfra.StartRedisProc(t, "--appendonly", "yes")
		replica := testinfra.StartRedisProc(t, "--appendonly", "yes", "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
		d := checkDurability(t, replica.URL)
		require.Equal(t, "slave", d.Role)
		require.Equal(t, []queue.Risk{queue.RiskReplica}, d.Risks, "%+v", d)
		// A single node's replicas are not promoted automatically: no failover risk.
		eventually(t, "the replica connects", func() bool { return checkDurability(t, master.URL).ConnectedReplicas == 1 })
		require.Empty(t, checkDurability(t, master.URL).Risks)
	})

	t.Run("UnreachableIsAnError", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
		defer cancel()
		_, err := queue.CheckDurability(ctx, asynq.RedisClientOpt{Addr: testinfra.UnreachableAddr}, "q")
		require.Error(t, err)
	})

	// A Redis that accepts the connection and never answers is abandoned
	// when the context ends.
	t.Run("HungRedisEndsWithTheContext", func(t *testing.T) {
		t.Parallel()
		addr := blackHole(t)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := queue.CheckDurability(ctx, asynq.RedisClientOpt{Addr: addr}, "q")
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// blackHole accepts TCP connections and never answers: a Redis that hangs.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// eventually polls cond until it holds, for at most 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 2*time.Minute, 50*time.Millisecond, what) // generous: a busy CI machine
}

// Behind Sentinel the current master is read; in a Cluster the master that
// owns the queue's slot, whatever the other masters run with.
func TestDurabilityOnTopologies(t *testing.T) {
	t.Parallel()

	t.Run("Sentinel", func(t *testing.T) {
		t.Parallel()
		topo := redistopo.Sentinel(t)
		master := topo.Master(t)
		d := checkDurability(t, topo.URL)
		require.Equal(t, "sentinel", d.Topology)
		require.Equal(t, "master", d.Role, "the master is read, not a replica")
		require.Equal(t, 1, d.ConnectedReplicas)
		require.Equal(t, []queue.Risk{queue.RiskNoPersistence, queue.RiskMinReplicasOff}, d.Risks, "%+v", d)
		for _, kv := range [][2]string{{"appendonly", "yes"}, {"min-replicas-to-write", "1"}} {
			require.Contains(t, redistopo.Do(t, master, "CONFIG", "SET", kv[0], kv[1]), "OK")
		}
		d = checkDurability(t, topo.URL)
		require.Empty(t, d.Risks, "%+v", d)
	})

	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		topo := redistopo.Cluster(t)
		q := "q_" + uuid.NewString()[:8]
		parsed, err := redisurl.Parse(topo.URL)
		require.NoError(t, err)
		check := func() queue.Durability {
			ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
			defer cancel()
			d, err := queue.CheckDurability(ctx, queue.ConnOpt(parsed), q)
			require.NoError(t, err)
			return d
		}
		// Every node persists; then each master in turn evicts: only the
		// queue's own master (the one that does not redirect its keys)
		// makes the risk appear.
		for _, n := range topo.Nodes {
			require.Contains(t, redistopo.Do(t, n, "CONFIG", "SET", "appendonly", "yes", "min-replicas-to-write", "1"), "OK")
		}
		require.Empty(t, check().Risks)
		owners := 0
		for _, m := range topo.Nodes[:3] {
			require.Contains(t, redistopo.Do(t, m, "CONFIG", "SET", "maxmemory", "1gb", "maxmemory-policy", "allkeys-lru"), "OK")
			d := check()
			owns := !strings.Contains(redistopo.Do(t, m, "GET", "asynq:{"+q+"}:probe"), "MOVED")
			if owns {
				owners++
				require.Equal(t, []queue.Risk{queue.RiskEvictionPolicy}, d.Risks, "the queue's master %s evicts: %+v", m, d)
				require.Equal(t, "cluster", d.Topology)
				require.Equal(t, "master", d.Role)
			} else {
				require.Empty(t, d.Risks, "master %s does not hold the queue: %+v", m, d)
			}
			require.Contains(t, redistopo.Do(t, m, "CONFIG", "SET", "maxmemory-policy", "noeviction"), "OK")
		}
		require.Equal(t, 1, owners, "one master owns the queue's slot")
	})
}

func TestDurabilityMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := queue.NewDurabilityMetrics(reg)
	require.NoError(t, err)
	names := []string{"asynq_queue_redis_durability_risk", "asynq_queue_redis_durability_check_up", "asynq_queue_redis_durability_checks_total"}
	expect := func(up, checks int, risks ...queue.Risk) string {
		var b strings.Builder
		b.WriteString("# HELP asynq_queue_redis_durability_check_up 1 when the last check of the queue Redis' durability settings could read them.\n# TYPE asynq_queue_redis_durability_check_up gauge\n")
		b.WriteString("asynq_queue_redis_durability_check_up " + strconv.Itoa(up) + "\n")
		b.WriteString("# HELP asynq_queue_redis_durability_checks_total Checks of the queue Redis' durability settings, successful or not.\n# TYPE asynq_queue_redis_durability_checks_total counter\n")
		b.WriteString("asynq_queue_redis_durability_checks_total " + strconv.Itoa(checks) + "\n")
		b.WriteString("# HELP asynq_queue_redis_durability_risk 1 while the queue's Redis can lose acknowledged tasks this way (eviction_policy, no_persistence, rdb_only, aof_fsync_lax, replica, min_replicas_off), per the last successful check.\n# TYPE asynq_queue_redis_durability_risk gauge\n")
		for _, r := range []queue.Risk{"aof_fsync_lax", "eviction_policy", "min_replicas_off", "no_persistence", "rdb_only", "replica"} {
			v := "0"
			for _, x := range risks {
				if x == r {
					v = "1"
				}
			}
			b.WriteString(`asynq_queue_redis_durability_risk{risk="` + string(r) + `"} ` + v + "\n")
		}
		return b.String()
	}
	// Every risk is exported at 0 before the first check.
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expect(0, 0)), names...))
	m.Observe(queue.Durability{Risks: []queue.Risk{queue.RiskEvictionPolicy, queue.RiskNoPersistence}}, nil)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expect(1, 1, queue.RiskEvictionPolicy, queue.RiskNoPersistence)), names...))
	// A failed check keeps the last known risks.
	m.Observe(queue.Durability{}, context.DeadlineExceeded)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expect(0, 2, queue.RiskEvictionPolicy, queue.RiskNoPersistence)), names...))
	m.Observe(queue.Durability{}, nil)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expect(1, 3)), names...))
	_, err = queue.NewDurabilityMetrics(reg)
	require.Error(t, err, "registering twice is refused")
}
