// Package procstat reads a process's CPU time from /proc, for the bench
// commands' CPU-per-event columns.
package procstat

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTick = 10 * time.Millisecond

// CPU returns the user plus system CPU time pid has used; 0 when it cannot
// be read (the process is gone).
func CPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * clockTick
}

// Servers is a sample of the CPU time of this run's Postgres backends and of
// redis-server. It only works when both run on this host; otherwise the
// figures are zero.
type Servers struct {
	pg    map[int]time.Duration
	redis time.Duration
}

// SampleServers reads the CPU time of db's database's backends and of every
// redis-server on this host.
func SampleServers(ctx context.Context, db *bun.DB) Servers {
	s := Servers{pg: map[int]time.Duration{}}
	rows, err := db.QueryContext(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	if err == nil {
		for rows.Next() {
			var pid int
			if rows.Scan(&pid) == nil {
				s.pg[pid] = CPU(pid)
			}
		}
		_ = rows.Close()
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm"); strings.TrimSpace(string(comm)) == "redis-server" {
			s.redis += CPU(pid)
		}
	}
	return s
}

// Since returns the Postgres (this database's backends) and Redis CPU used
// after prev; a backend that appeared meanwhile counts from zero.
func (s Servers) Since(prev Servers) (pg, redis time.Duration) {
	for pid, t := range s.pg {
		pg += t - prev.pg[pid]
	}
	return pg, s.redis - prev.redis
}

// PeakRSS returns the most resident memory pid has held so far (VmHWM, in
// bytes); 0 when it cannot be read.
func PeakRSS(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
