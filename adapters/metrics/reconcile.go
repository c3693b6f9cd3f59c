package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/july/template/core/relay"
)

// ReconcileMetrics exports what the outbox reconciler finds: the events
// still waiting for their consumer, how old the oldest is, the tasks the
// queue lost and were published again (by what triggered the pass), and
// the signs of loss seen.
type ReconcileMetrics struct {
	signals     *prometheus.CounterVec
	passes      *prometheus.CounterVec
	republished *prometheus.CounterVec
	abandoned   prometheus.Counter
	gaveUp      prometheus.Counter
	watched     prometheus.Gauge
	oldest      prometheus.Gauge
}

var _ relay.ReconcileObserver = (*ReconcileMetrics)(nil)

// Loss signal kinds and pass triggers exported at 0 from the start.
var (
	lossSignals       = []string{"restart", "failover", "canary_missing", "eviction", "master_switch", "database_restored"}
	reconcileTriggers = append([]string{relay.TriggerPeriodic}, lossSignals...)
)

// NewReconcileMetrics registers the reconciler's metrics on reg.
func NewReconcileMetrics(reg prometheus.Registerer) (*ReconcileMetrics, error) {
	m := &ReconcileMetrics{
		signals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "outbox_queue_loss_signals_total", Help: "Signs that the queue's Redis forgot acknowledged tasks, by signal (restart, failover, canary_missing, eviction, master_switch, database_restored).",
		}, []string{"signal"}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "outbox_reconcile_passes_total", Help: "Reconciliation passes by trigger and result (ok, error).",
		}, []string{"trigger", "result"}),
		republished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "outbox_republished_total", Help: "Delivered, unconsumed events whose task the queue had lost, published again, by the pass's trigger.",
		}, []string{"trigger"}),
		abandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_consumer_abandoned_total", Help: "Events the queue archived without a consumer result (every attempt's worker died); recorded as consumer failures.",
		}),
		gaveUp: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_republish_gave_up_total", Help: "Events published again the maximum number of times without any consumer recording them.",
		}),
		watched: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_unconsumed_events", Help: "Delivered events no consumer has recorded yet (as of the last reconciliation pass).",
		}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "outbox_oldest_unconsumed_age_seconds", Help: "Age (now minus created_at) of the oldest delivered event no consumer has recorded yet.",
		}),
	}
	for _, c := range []prometheus.Collector{m.signals, m.passes, m.republished, m.abandoned, m.gaveUp, m.watched, m.oldest} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, s := range lossSignals {
		m.signals.WithLabelValues(s)
	}
	for _, tr := range reconcileTriggers {
		m.republished.WithLabelValues(tr)
		m.passes.WithLabelValues(tr, "ok")
		m.passes.WithLabelValues(tr, "error")
	}
	return m, nil
}

// Signal implements relay.ReconcileObserver.
func (m *ReconcileMetrics) Signal(kind string) { m.signals.WithLabelValues(kind).Inc() }

// Pass implements relay.ReconcileObserver.
func (m *ReconcileMetrics) Pass(r relay.ReconcileResult) {
	result := "ok"
	if r.Err != nil {
		result = "error"
	}
	m.passes.WithLabelValues(r.Trigger, result).Inc()
	m.republished.WithLabelValues(r.Trigger).Add(float64(r.Republished))
	m.abandoned.Add(float64(r.Abandoned))
	m.gaveUp.Add(float64(r.GaveUp))
	m.watched.Set(float64(r.Watched))
	m.oldest.Set(r.OldestAge.Seconds())
}
