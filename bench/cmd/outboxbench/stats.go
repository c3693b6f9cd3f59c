package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/july/template/core/relay"
)

// counter is a relay.Observer that counts delivered events and closes done
// once want of them are marked Delivered.
type counter struct {
	want      int64
	delivered atomic.Int64
	other     atomic.Int64 // retried, failed or lost: should stay 0
	done      chan struct{}
}

func newCounter(want int) *counter {
	return &counter{want: int64(want), done: make(chan struct{})}
}

func (c *counter) Batch(r relay.BatchResult) {
	c.other.Add(int64(r.Retried + r.Failed + r.Lost))
	if n := c.delivered.Add(int64(r.Delivered)); n >= c.want && n-int64(r.Delivered) < c.want {
		close(c.done)
	}
}

// Recovered counts events failed by the lease recovery as failures; a
// requeued lease is only slow, and the drain still waits for its delivery.
func (c *counter) Recovered(r relay.RecoveryResult) { c.other.Add(int64(len(r.FailedEvents))) }

// cpuUsage is CPU consumed between two samples: this process, and the whole
// machine (Postgres and Redis included) as a share of all cores.
type cpuUsage struct {
	proc      time.Duration
	busy, all uint64 // jiffies from /proc/stat
}

func sampleUsage() cpuUsage {
	var u cpuUsage
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.proc = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return u
	}
	line, _, _ := strings.Cut(string(b), "\n")
	for i, f := range strings.Fields(line)[1:] {
		n, _ := strconv.ParseUint(f, 10, 64)
		u.all += n
		if i != 3 && i != 4 { // idle, iowait
			u.busy += n
		}
	}
	return u
}

// since returns the process CPU used and the machine's busy share.
func (u cpuUsage) since(prev cpuUsage) (time.Duration, float64) {
	busy := 0.0
	if d := u.all - prev.all; d > 0 {
		busy = float64(u.busy-prev.busy) / float64(d)
	}
	return u.proc - prev.proc, busy
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile returns the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

func joinFloats(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}

func parseInts(s, flagName string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-%s %q: want comma-separated positive integers", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
