package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// SweepMetrics counts what the relay's sweeps did, labelled by the
// registered table's name (a bounded set: one per registration).
type SweepMetrics struct {
	recovered     *prometheus.CounterVec
	enqueueFailed *prometheus.CounterVec
	idemExpired   *prometheus.CounterVec
	committed     *prometheus.CounterVec
	skipped       *prometheus.CounterVec
	failed        *prometheus.CounterVec
}

// NewSweepMetrics registers on reg:
//   - tasks_recovered_total{task}: tasks whose lease expired (a stopped
//     worker) returned to Pending and delivered again;
//   - tasks_recovery_delivery_failures_total{task}: re-deliveries that
//     failed (the task is Pending; the next pass retries);
//   - idempotency_records_expired_total{table}: idempotency records
//     cleared by the retention job;
//   - periodic_occurrences_committed_total{command},
//     periodic_occurrences_skipped_total{command} and
//     periodic_command_failures_total{command}: what this relay's passes
//     over the periodic commands did (core/periodic.Runner; the sum over
//     relays is what the command did).
func NewSweepMetrics(reg prometheus.Registerer) (*SweepMetrics, error) {
	m := &SweepMetrics{
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tasks_recovered_total", Help: "Tasks whose lease expired (worker stopped) returned to pending and delivered again by the recovery sweep.",
		}, []string{"task"}),
		enqueueFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tasks_recovery_delivery_failures_total", Help: "Recovered tasks whose re-delivery failed; the sweep retries them on its next pass.",
		}, []string{"task"}),
		idemExpired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idempotency_records_expired_total", Help: "Idempotency records (key and stored response) cleared after the retention window.",
		}, []string{"table"}),
		committed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "periodic_occurrences_committed_total", Help: "Occurrences of a periodic command this relay committed as outbox events.",
		}, []string{"command"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "periodic_occurrences_skipped_total", Help: "Missed occurrences of a periodic command its catch-up policy skipped.",
		}, []string{"command"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "periodic_command_failures_total", Help: "Passes over a periodic command that failed (nothing committed; the next pass retries).",
		}, []string{"command"}),
	}
	for _, c := range []prometheus.Collector{m.recovered, m.enqueueFailed, m.idemExpired, m.committed, m.skipped, m.failed} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register sweep metrics: %w", err)
		}
	}
	return m, nil
}

// TaskRecovered is sweep.TaskRecoveryConfig.RecoveredFunc.
func (m *SweepMetrics) TaskRecovered(table string, n int) {
	m.recovered.WithLabelValues(table).Add(float64(n))
}

// TaskDeliveryFailed is sweep.TaskRecoveryConfig.EnqueueFailedFunc.
func (m *SweepMetrics) TaskDeliveryFailed(table string) {
	m.enqueueFailed.WithLabelValues(table).Inc()
}

// IdempotencyExpired is sweep.IdempotencyRetentionConfig.ExpiredFunc.
func (m *SweepMetrics) IdempotencyExpired(table string, n int) {
	if n > 0 {
		m.idemExpired.WithLabelValues(table).Add(float64(n))
	}
}

// PeriodicCommitted is periodic.RunnerConfig.CommittedFunc.
func (m *SweepMetrics) PeriodicCommitted(command string, n int) {
	m.committed.WithLabelValues(command).Add(float64(n))
}

// PeriodicSkipped is periodic.RunnerConfig.SkippedFunc.
func (m *SweepMetrics) PeriodicSkipped(command string, n int) {
	m.skipped.WithLabelValues(command).Add(float64(n))
}

// PeriodicFailed is periodic.RunnerConfig.FailedFunc.
func (m *SweepMetrics) PeriodicFailed(command string) {
	m.failed.WithLabelValues(command).Inc()
}
