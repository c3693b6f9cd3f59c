package main_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/internal/redistopo"
)

// durabilityLine is the part of a queue-durability log line the test reads.
type durabilityLine struct {
	Level   string   `json:"level"`
	Msg     string   `json:"msg"`
	Risks   []string `json:"risks"`
	Added   []string `json:"added"`
	Cleared []string `json:"cleared"`
	Source  string   `json:"source"`
	Policy  string   `json:"maxmemory_policy"`
}

// durabilityLines returns the relay's queue-durability log lines.
func (p *relayProc) durabilityLines() []durabilityLine {
	p.t.Helper()
	var out []durabilityLine
	for line := range strings.SplitSeq(p.logs.String(), "\n") {
		if !strings.Contains(line, `"component":"queue-durability"`) {
			continue
		}
		var l durabilityLine
		require.NoError(p.t, json.Unmarshal([]byte(line), &l), "log line %s", line)
		out = append(out, l)
	}
	return out
}

// A relay whose queue Redis evicts and keeps nothing on disk says so at
// start: one WARN naming both risks and what to set, and the risk gauges at
// 1. An unchanged check logs nothing more; each change of the risks logs
// one line, and fixing the Redis clears the gauges.
func TestE2EQueueDurabilityWarning(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	rp := testinfra.StartRedisProc(t, "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru")
	w := newWorld(t, rp.URL)
	r := w.startRelay("relay-durability", "RELAY_QUEUE_DURABILITY_CHECK=10s")

	risk := func(name string) float64 {
		v, ok := r.sample(`asynq_queue_redis_durability_risk{risk="` + name + `"}`)
		require.True(t, ok, "the relay exports the %s risk", name)
		return v
	}
	checks := func() float64 {
		v, _ := r.sample("asynq_queue_redis_durability_checks_total")
		return v
	}
	eventually(t, "the first durability check", func() (bool, string) {
		return checks() >= 1, fmt.Sprintf("checks %v", checks())
	})
	require.EqualValues(t, 1, r.metric("asynq_queue_redis_durability_check_up"))
	want := map[string]float64{"eviction_policy": 1, "no_persistence": 1, "rdb_only": 0, "aof_fsync_lax": 0, "replica": 0, "min_replicas_off": 0}
	for name, v := range want {
		require.Equal(t, v, risk(name), "risk %s", name)
	}
	lines := r.durabilityLines()
	require.Len(t, lines, 1, "one line at start: %+v", lines)
	require.Equal(t, "WARN", lines[0].Level)
	require.Equal(t, []string{"eviction_policy", "no_persistence"}, lines[0].Risks)
	require.Equal(t, "config", lines[0].Source)
	require.Equal(t, "allkeys-lru", lines[0].Policy)
	for _, fix := range []string{"maxmemory-policy noeviction", "appendonly yes", "appendfsync everysec"} {
		require.Contains(t, lines[0].Msg, fix, "the WARN says what to set")
	}

	// The next check finds the same risks: no new line.
	eventually(t, "a second durability check", func() (bool, string) {
		return checks() >= 2, fmt.Sprintf("checks %v", checks())
	})
	require.Len(t, r.durabilityLines(), 1, "an unchanged check logs nothing: %s", r.logs.String())

	node := "127.0.0.1:" + strconv.Itoa(rp.Port)
	require.Contains(t, redistopo.Do(t, node, "CONFIG", "SET", "maxmemory-policy", "noeviction"), "OK")
	eventually(t, "eviction_policy clears", func() (bool, string) {
		return risk("eviction_policy") == 0, fmt.Sprintf("eviction_policy %v", risk("eviction_policy"))
	})
	require.EqualValues(t, 1, risk("no_persistence"))
	lines = r.durabilityLines()
	require.Len(t, lines, 2, "one line for the change: %+v", lines)
	require.Equal(t, "WARN", lines[1].Level)
	require.Equal(t, []string{"no_persistence"}, lines[1].Risks)
	require.Equal(t, []string{"eviction_policy"}, lines[1].Cleared)
	require.Empty(t, lines[1].Added)

	require.Contains(t, redistopo.Do(t, node, "CONFIG", "SET", "appendonly", "yes"), "OK")
	eventually(t, "no_persistence clears", func() (bool, string) {
		return risk("no_persistence") == 0, fmt.Sprintf("no_persistence %v", risk("no_persistence"))
	})
	lines = r.durabilityLines()
	require.Len(t, lines, 3, "%+v", lines)
	require.Equal(t, "INFO", lines[2].Level, "every risk cleared: %+v", lines[2])
	require.Empty(t, lines[2].Risks)
	require.Equal(t, []string{"no_persistence"}, lines[2].Cleared)
	require.EqualValues(t, 1, r.metric("asynq_queue_redis_durability_check_up"))
}
