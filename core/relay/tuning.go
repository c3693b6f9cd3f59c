package relay

import (
	"time"

	"github.com/july/template/core/outbox"
)

// Tuning is the part of Config an operator may change while the relay
// runs (the registered system-config keys relay.delivery.*). Zero fields
// keep the current value.
type Tuning struct {
	BatchSize   int
	LeaseFor    time.Duration
	MaxAttempts int
}

// Retune applies t from the next claim on; values outside their Config
// range are ignored. It is safe to call while the relay runs.
func (r *Relay) Retune(t Tuning) {
	r.tuneMu.Lock()
	defer r.tuneMu.Unlock()
	if t.BatchSize >= MinBatchSize && t.BatchSize <= MaxBatchSize {
		r.cfg.BatchSize = t.BatchSize
	}
	if t.LeaseFor >= MinLeaseFor && t.LeaseFor <= MaxLeaseFor {
		r.cfg.LeaseFor = t.LeaseFor
	}
	if t.MaxAttempts >= MinMaxAttempts && t.MaxAttempts <= MaxMaxAttempts {
		r.cfg.Policy.MaxAttempts = t.MaxAttempts
	}
}

// Tuning returns the values in effect.
func (r *Relay) Tuning() Tuning {
	c := r.tuned()
	return Tuning{BatchSize: c.BatchSize, LeaseFor: c.LeaseFor, MaxAttempts: c.Policy.MaxAttempts}
}

// tuned returns a snapshot of the config with the current tuning.
func (r *Relay) tuned() Config {
	r.tuneMu.RLock()
	defer r.tuneMu.RUnlock()
	return r.cfg
}

// policy is the current retry policy.
func (r *Relay) policy() outbox.Policy { return r.tuned().Policy }
