// Package metrics is the Prometheus adapter: the registry the apps serve
// on /metrics, the relay's counters (a relay.Observer) and the outbox
// backlog gauges read from the store at scrape time.
package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

// RelayMetrics turns relay batch results into counters and histograms.
type RelayMetrics struct {
	delivered  prometheus.Counter
	failures   *prometheus.CounterVec
	attempts   prometheus.Histogram
	lost       prometheus.Counter
	recovered  prometheus.Counter
	batchSizes prometheus.Histogram
	claims     *prometheus.CounterVec
	lag        prometheus.Histogram
}

var (
	_ relay.Observer      = (*RelayMetrics)(nil)
	_ relay.ClaimObserver = (*RelayMetrics)(nil)
)

// NewRelayMetrics registers the relay counters on reg.
func NewRelayMetrics(reg prometheus.Registerer) *RelayMetrics {
	m := &RelayMetrics{
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_delivered_total", Help: "Outbox events enqueued and marked delivered.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "outbox_delivery_failures_total", Help: "Failed delivery attempts by outcome (retry, or final: the event is now failed, alert) and error_code.",
		}, []string{"outcome", "error_code"}),
		attempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "outbox_delivery_attempts", Help: "retry_count reached by each failed attempt.",
			Buckets: []float64{1, 2, 3, 5, 8, 12, 20},
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_leases_lost_total", Help: "Rows whose lease was lost before the relay could mark them.",
		}),
		recovered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_leases_recovered_total", Help: "Expired leases taken back by the recovery sweep, each a failed attempt: back to pending, or failed (counted as a final failure, LEASE_EXPIRED) when it was the event's last.",
		}),
		batchSizes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "outbox_claim_batch_size", Help: "Rows claimed per batch.",
			Buckets: []float64{1, 5, 10, 25, 50, 100, 250, 500},
		}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "outbox_claims_total", Help: "Claims by result: full (the batch size), short (fewer rows: the backlog ran out, or other relays held them) or empty.",
		}, []string{"result"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "outbox_delivery_lag_seconds", Help: "Time from an outbox event's due time (its commit, or not_before when delayed) to its enqueue, per delivered event.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}),
	}
	reg.MustRegister(m.delivered, m.failures, m.attempts, m.lost, m.recovered, m.batchSizes, m.claims, m.lag)
	for _, r := range []string{"full", "short", "empty"} {
		m.claims.WithLabelValues(r) // exported at 0 from the start, so rate() sees the first claim
	}
	return m
}

// Batch implements relay.Observer.
func (m *RelayMetrics) Batch(r relay.BatchResult) {
	m.batchSizes.Observe(float64(r.Claimed))
	m.delivered.Add(float64(r.Delivered))
	m.lost.Add(float64(r.Lost))
	for _, a := range r.Attempts {
		m.attempts.Observe(float64(a))
	}
	for i, l := range r.Lags {
		if i < len(r.LagTraceParents) {
			if id := traceID(r.LagTraceParents[i]); id != "" {
				// The exemplar leads from a slow bucket to the request
				// that wrote the event (OpenMetrics scrapes only).
				m.lag.(prometheus.ExemplarObserver).ObserveWithExemplar(l.Seconds(), prometheus.Labels{"trace_id": id})
				continue
			}
		}
		m.lag.Observe(l.Seconds())
	}
	for code, n := range r.RetryCodes {
		m.failures.WithLabelValues("retry", code).Add(float64(n))
	}
	for _, f := range r.FailedEvents {
		m.failures.WithLabelValues("final", f.Code).Inc()
	}
}

// Claim implements relay.ClaimObserver.
func (m *RelayMetrics) Claim(rows, limit int) {
	switch {
	case rows == 0:
		m.claims.WithLabelValues("empty").Inc()
	case rows < limit:
		m.claims.WithLabelValues("short").Inc()
	default:
		m.claims.WithLabelValues("full").Inc()
	}
}

// Recovered implements relay.Observer. Events failed by the recovery (the
// lost lease was their last attempt) also count as final delivery
// failures, so the OutboxFinalFailures page sees them (error_code
// LEASE_EXPIRED).
func (m *RelayMetrics) Recovered(r relay.RecoveryResult) {
	m.recovered.Add(float64(r.Requeued + len(r.FailedEvents)))
	for _, f := range r.FailedEvents {
		m.failures.WithLabelValues("final", f.Code).Inc()
	}
}

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

	pending, scheduled, delivering, failed, expired, oldest, due, up *prometheus.Desc
	stuck, backlog, retries                                          *prometheus.Desc
}

// RegisterOutboxStats registers the backlog gauges (outbox_pending_events,
// outbox_oldest_pending_age_seconds, ...) read from store at scrape time.
func RegisterOutboxStats(reg prometheus.Registerer, store ports.OutboxOperatorStore, clock ports.Clock, log *slog.Logger) error {
	return reg.Register(newStatsCollector(store, clock, log))
}

func newStatsCollector(store ports.OutboxOperatorStore, clock ports.Clock, log *slog.Logger) *statsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &statsCollector{
		store: store, clock: clock, log: log,
		pending:    d("outbox_pending_events", "Outbox rows waiting for delivery (status 1), due or backing off; delayed rows not yet due are outbox_scheduled_events."),
		scheduled:  d("outbox_scheduled_events", "Delayed outbox rows whose not_before is still ahead: not late, in no other backlog gauge or age."),
		delivering: d("outbox_inflight_events", "Outbox rows leased to a relay (status 2)."),
		failed:     d("outbox_failed_events", "Outbox rows failed for good (status 4); replay after fixing the cause."),
		expired:    d("outbox_expired_leases", "Leased rows whose lease has expired (a relay died)."),
		oldest:     d("outbox_oldest_pending_age_seconds", "Now minus the due time (created_at, or not_before when delayed) of the oldest undelivered (pending or in-flight) outbox row; rises during any outage."),
		due:        d("outbox_oldest_due_age_seconds", "How long the most overdue pending outbox row has been due (relay lag); rows backing off are not due."),
		up:         d("outbox_stats_up", "1 when the last backlog query succeeded."),
		stuck:      d("outbox_stuck_aggregates", "Aggregates whose ordered events wait behind a failed event or a failed consumer (relay outbox stuck); replay the blocker."),
		backlog:    d("outbox_backlog_events", "Pending and in-flight rows per event type.", "event_type"),
		retries:    d("outbox_undelivered_events_by_retries", "Undelivered rows by retry_count.", "retry_count"),
	}
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.scheduled, c.delivering, c.failed, c.expired, c.oldest, c.due, c.up, c.stuck, c.backlog, c.retries} {
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
	g(c.scheduled, float64(st.Scheduled))
	g(c.delivering, float64(st.Delivering))
	g(c.failed, float64(st.Failed))
	g(c.expired, float64(st.ExpiredLeases))
	g(c.oldest, st.OldestPendingAge.Seconds())
	g(c.due, st.OldestDueAge.Seconds())
	g(c.stuck, float64(st.StuckAggregates))
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
		c.log.Warn("outbox backlog query failed; outbox_stats_up=0", "error", c.lastErr)
	}
	return c.last, c.lastErr
}

// NewRegistry returns a registry with the Go and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ConsumerFailedFunc counts consumer failures by event type
// (outbox_consumer_failures_total); it is relay.DeadLetterConfig.MarkedFunc.
type ConsumerFailedFunc func(eventType string)

// NewConsumerFailures registers outbox_consumer_failures_total on reg.
func NewConsumerFailures(reg prometheus.Registerer) (ConsumerFailedFunc, error) {
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outbox_consumer_failures_total",
		Help: "Delivered outbox events whose consumer gave up (now failed, alert); replay after fixing the cause.",
	}, []string{"event_type"})
	if err := reg.Register(failures); err != nil {
		return nil, fmt.Errorf("register outbox_consumer_failures_total: %w", err)
	}
	return func(eventType string) { failures.WithLabelValues(eventType).Inc() }, nil
}

// RetentionRemovedFunc counts delivered rows the retention job removed
// (outbox_retention_removed_total); it is relay.Retention.RemovedFunc.
type RetentionRemovedFunc func(n int)

// NewRetentionRemoved registers outbox_retention_removed_total on reg.
// Only here: RelayMetrics must not register it too.
func NewRetentionRemoved(reg prometheus.Registerer) (RetentionRemovedFunc, error) {
	removed := prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_retention_removed_total", Help: "Delivered events removed by the retention job."})
	if err := reg.Register(removed); err != nil {
		return nil, fmt.Errorf("register outbox_retention_removed_total: %w", err)
	}
	return func(n int) { removed.Add(float64(n)) }, nil
}

// ConfigAlertFunc counts one system-config alert by its code
// (config_alerts_total{code}); the API's configsvc AlertFunc calls it.
type ConfigAlertFunc func(code string)

// NewConfigAlerts registers config_alerts_total on reg.
func NewConfigAlerts(reg prometheus.Registerer) (ConfigAlertFunc, error) {
	alerts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "config_alerts_total",
		Help: "System-config alerts by code: cache invalidation failed, stored value unusable, fallback used.",
	}, []string{"code"})
	if err := reg.Register(alerts); err != nil {
		return nil, fmt.Errorf("register config_alerts_total: %w", err)
	}
	return func(code string) { alerts.WithLabelValues(code).Inc() }, nil
}

// traceID is the trace id of a W3C traceparent
// ("00-<32 hex>-<16 hex>-<flags>"), or "" when tp is not one.
func traceID(tp string) string {
	if len(tp) != 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return ""
	}
	id := tp[3:35]
	for i := range len(id) {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	if id == "00000000000000000000000000000000" {
		return ""
	}
	return id
}
