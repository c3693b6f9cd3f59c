package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/bench/internal/procstat"
)

// serverCPU samples the CPU time of this run's Postgres backends and of
// redis-server. It only works when both run on this host; otherwise the
// figures are zero.
type serverCPU struct {
	pg    map[int]time.Duration
	redis time.Duration
}

func sampleServers(ctx context.Context, db *bun.DB) serverCPU {
	s := serverCPU{pg: map[int]time.Duration{}}
	rows, err := db.QueryContext(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	if err == nil {
		for rows.Next() {
			var pid int
			if rows.Scan(&pid) == nil {
				s.pg[pid] = procstat.CPU(pid)
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
			s.redis += procstat.CPU(pid)
		}
	}
	return s
}

// since returns the Postgres (this database's backends) and Redis CPU used
// after prev; a backend that appeared meanwhile counts from zero.
func (s serverCPU) since(prev serverCPU) (pg, redis time.Duration) {
	for pid, t := range s.pg {
		pg += t - prev.pg[pid]
	}
	return pg, s.redis - prev.redis
}
