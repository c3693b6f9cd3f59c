package main

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

// relayMetrics turns relay batch results into counters and histograms.
type relayMetrics struct {
	delivered  prometheus.Counter
	failures   *prometheus.CounterVec
	attempts   prometheus.Histogram
	lost       prometheus.Counter
	recovered  prometheus.Counter
	batchSizes prometheus.Histogram
}

var _ relay.Observer = (*relayMetrics)(nil)

func newRelayMetrics(reg prometheus.Registerer) *relayMetrics {
	m := &relayMetrics{
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_delivered_total", Help: "Outbox events enqueued and marked delivered.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "outbox_delivery_failures_total", Help: "Failed delivery attempts; outcome=retry or final (event now failed, alert).",
		}, []string{"outcome", "error_code"}),
		attempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "outbox_delivery_attempts", Help: "retry_count reached by each failed attempt.",
			Buckets: []float64{1, 2, 3, 5, 8, 12, 20},
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_leases_lost_total", Help: "Rows whose lease was lost before the relay could mark them.",
		}),
		recovered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_leases_recovered_total", Help: "Expired leases returned to pending by the recovery sweep.",
		}),
		batchSizes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "outbox_claim_batch_size", Help: "Rows claimed per batch.",
			Buckets: []float64{1, 5, 10, 25, 50, 100, 250, 500},
		}),
	}
	reg.MustRegister(m.delivered, m.failures, m.attempts, m.lost, m.recovered, m.batchSizes)
	return m
}

// Batch implements relay.Observer.
func (m *relayMetrics) Batch(r relay.BatchResult) {
	m.batchSizes.Observe(float64(r.Claimed))
	m.delivered.Add(float64(r.Delivered))
	m.lost.Add(float64(r.Lost))
	for _, a := range r.Attempts {
		m.attempts.Observe(float64(a))
	}
	if r.Retried > 0 {
		m.failures.WithLabelValues("retry", "").Add(float64(r.Retried))
	}
	for _, f := range r.FailedEvents {
		m.failures.WithLabelValues("final", f.Code).Inc()
	}
}

// Recovered implements relay.Observer.
func (m *relayMetrics) Recovered(n int) { m.recovered.Add(float64(n)) }

// statsCollector reads the backlog from the store at scrape time, at most
// once per second, so gauges are true for the whole fleet of relays.
type statsCollector struct {
	store ports.OutboxOperatorStore
	clock ports.Clock
	log   *slog.Logger

	mu      sync.Mutex
	last    ports.OutboxStats
	lastAt  time.Time
	lastErr error

	pending, delivering, failed, expired, oldest, up *prometheus.Desc
	backlog, retries                                 *prometheus.Desc
}

func newStatsCollector(store ports.OutboxOperatorStore, clock ports.Clock, log *slog.Logger) *statsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &statsCollector{
		store: store, clock: clock, log: log,
		pending:    d("outbox_pending_events", "Outbox rows waiting for delivery (status 1)."),
		delivering: d("outbox_inflight_events", "Outbox rows leased to a relay (status 2)."),
		failed:     d("outbox_failed_events", "Outbox rows failed for good (status 4); replay after fixing the cause."),
		expired:    d("outbox_expired_leases", "Leased rows whose lease has expired (a relay died)."),
		oldest:     d("outbox_oldest_pending_age_seconds", "Age of the oldest pending outbox row."),
		up:         d("outbox_stats_up", "1 when the last backlog query succeeded."),
		backlog:    d("outbox_backlog_events", "Pending and in-flight rows per event type.", "event_type"),
		retries:    d("outbox_undelivered_by_retry_count", "Undelivered rows by retry_count.", "retry_count"),
	}
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.delivering, c.failed, c.expired, c.oldest, c.up, c.backlog, c.retries} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.snapshot()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	g(c.up, 1)
	g(c.pending, float64(st.Pending))
	g(c.delivering, float64(st.Delivering))
	g(c.failed, float64(st.Failed))
	g(c.expired, float64(st.ExpiredLeases))
	g(c.oldest, st.OldestPendingAge.Seconds())
	for typ, n := range st.BacklogByType {
		g(c.backlog, float64(n), typ)
	}
	for rc, n := range st.RetryHistogram {
		g(c.retries, float64(n), strconv.Itoa(rc))
	}
}

func (c *statsCollector) snapshot() (ports.OutboxStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if !c.lastAt.IsZero() && now.Sub(c.lastAt) < time.Second {
		return c.last, c.lastErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.last, c.lastErr = c.store.Stats(ctx, now)
	c.lastAt = now
	if c.lastErr != nil {
		c.log.Warn("outbox backlog query failed; outbox_stats_up=0", "err", c.lastErr)
	}
	return c.last, c.lastErr
}
