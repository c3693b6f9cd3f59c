package queue

import (
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
)

// Queue-size collector defaults.
const (
	// DefaultStatsTimeout bounds one read of the queue sizes at scrape time.
	DefaultStatsTimeout = 2 * time.Second
	// DefaultStatsMaxAge is how long a read is reused across scrapes, so
	// several Prometheus servers scraping one process cost one read.
	DefaultStatsMaxAge = 5 * time.Second
)

// queueStates are the task states exported per queue, in asynq's terms.
var queueStates = []string{"pending", "active", "scheduled", "retry", "archived", "completed"}

// queueStats reads asynq's per-queue task counts at scrape time through
// the Inspector (the queue list, then one GetQueueInfo per queue, reused for
// DefaultStatsMaxAge, abandoned after DefaultStatsTimeout) and exports
// asynq_queue_tasks{queue,state} and asynq_queue_stats_up{queue}.
type queueStats struct {
	ins    *asynq.Inspector
	queues []string
	tasks  *prometheus.Desc
	up     *prometheus.Desc

	mu     sync.Mutex
	last   map[string]*asynq.QueueInfo // nil value: the read failed
	lastAt time.Time
}

// NewQueueStats returns a prometheus.Collector of the sizes of queues,
// read through ins, which the caller owns.
func NewQueueStats(ins *asynq.Inspector, queues []string) prometheus.Collector {
	qs := slices.Clone(queues)
	slices.Sort(qs)
	return &queueStats{
		ins: ins, queues: slices.Compact(qs),
		tasks: prometheus.NewDesc("asynq_queue_tasks",
			"Tasks in an Asynq queue by state (pending, active, scheduled, retry, archived, completed), read at scrape time.",
			[]string{"queue", "state"}, nil),
		up: prometheus.NewDesc("asynq_queue_stats_up",
			"1 when the last read of the queue's sizes from Redis succeeded.", []string{"queue"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (s *queueStats) Describe(ch chan<- *prometheus.Desc) { ch <- s.tasks; ch <- s.up }

// Collect implements prometheus.Collector.
func (s *queueStats) Collect(ch chan<- prometheus.Metric) {
	for _, q := range s.queues {
		info := s.snapshot()[q]
		if info == nil {
			ch <- prometheus.MustNewConstMetric(s.up, prometheus.GaugeValue, 0, q)
			continue
		}
		ch <- prometheus.MustNewConstMetric(s.up, prometheus.GaugeValue, 1, q)
		for i, n := range []int{info.Pending, info.Active, info.Scheduled, info.Retry, info.Archived, info.Completed} {
			ch <- prometheus.MustNewConstMetric(s.tasks, prometheus.GaugeValue, float64(n), q, queueStates[i])
		}
	}
}

func (s *queueStats) snapshot() map[string]*asynq.QueueInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && time.Since(s.lastAt) < DefaultStatsMaxAge {
		return s.last
	}
	done := make(chan map[string]*asynq.QueueInfo, 1)
	go func() { // the Inspector takes no context: a hung Redis is abandoned
		out := make(map[string]*asynq.QueueInfo, len(s.queues))
		known, err := s.ins.Queues()
		for _, q := range s.queues {
			switch {
			case err != nil:
				out[q] = nil
			case !slices.Contains(known, q):
				out[q] = &asynq.QueueInfo{Queue: q} // nothing enqueued yet
			default:
				out[q], _ = s.ins.GetQueueInfo(q) // nil on error
			}
		}
		done <- out
	}()
	select {
	case s.last = <-done:
	case <-time.After(DefaultStatsTimeout):
		s.last = map[string]*asynq.QueueInfo{}
	}
	s.lastAt = time.Now()
	return s.last
}
