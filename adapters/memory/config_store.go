package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// ErrAuditFailed is returned by ConfigStore writes after FailNextAudit.
var ErrAuditFailed = errors.New("audit write failed (simulated)")

// ConfigStore is an in-memory ports.ConfigStore. It keeps the audit records
// it was given, so tests can assert them with Audits. SetDown simulates an
// outage of the database behind it.
type ConfigStore struct {
	outage
	mu        sync.Mutex
	rows      map[string]sysconfig.Stored
	audits    []ports.AuditRecord
	failAudit bool
}

var _ ports.ConfigStore = (*ConfigStore)(nil)

// NewConfigStore returns an empty store.
func NewConfigStore() *ConfigStore {
	return &ConfigStore{rows: map[string]sysconfig.Stored{}}
}

// Get implements ports.ConfigStore.
func (s *ConfigStore) Get(_ context.Context, key string) (sysconfig.Stored, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("get config %q", key); err != nil {
		return sysconfig.Stored{}, err
	}
	row, ok := s.rows[key]
	if !ok {
		return sysconfig.Stored{}, fmt.Errorf("get config %q: %w", key, ports.ErrNotFound)
	}
	return row, nil
}

// List implements ports.ConfigStore.
func (s *ConfigStore) List(_ context.Context, module string) ([]sysconfig.Stored, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("list config of module %q", module); err != nil {
		return nil, err
	}
	out := []sysconfig.Stored{}
	for _, row := range s.rows {
		if module == "" || row.Module == module {
			out = append(out, row)
		}
	}
	slices.SortFunc(out, func(a, b sysconfig.Stored) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}

// Apply implements ports.ConfigStore. The row and the audit record change
// together under one lock; after FailNextAudit neither changes.
func (s *ConfigStore) Apply(_ context.Context, plan sysconfig.Plan, audit ports.AuditRecord, now time.Time) (sysconfig.Stored, error) {
	if plan.NewVersion != plan.BaseVersion+1 {
		return sysconfig.Stored{}, fmt.Errorf("apply config %q: plan goes from version %d to %d; build plans with sysconfig.PlanUpdate",
			plan.Spec.Key, plan.BaseVersion, plan.NewVersion)
	}
	row := plan.Row(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("apply config %q", row.Key); err != nil {
		return sysconfig.Stored{}, err
	}
	if actual := s.rows[row.Key].Version; actual != plan.BaseVersion {
		return sysconfig.Stored{}, &sysconfig.VersionConflictError{Key: row.Key, Expected: plan.BaseVersion, Actual: actual}
	}
	if audit.At.IsZero() {
		audit.At = now
	}
	if err := s.writeAudit(audit); err != nil {
		return sysconfig.Stored{}, fmt.Errorf("apply config %q: %w", row.Key, err)
	}
	s.rows[row.Key] = row
	return row, nil
}

// RecordRejected implements ports.ConfigStore.
func (s *ConfigStore) RecordRejected(_ context.Context, audit ports.AuditRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("record rejected %s of %s", audit.Action, audit.ResourceID); err != nil {
		return err
	}
	if err := s.writeAudit(audit); err != nil {
		return fmt.Errorf("record rejected %s of %s: %w", audit.Action, audit.ResourceID, err)
	}
	return nil
}

func (s *ConfigStore) writeAudit(rec ports.AuditRecord) error {
	if s.failAudit {
		s.failAudit = false
		return ErrAuditFailed
	}
	s.audits = append(s.audits, rec)
	return nil
}

// Audits returns the audit records written so far, oldest first.
func (s *ConfigStore) Audits() []ports.AuditRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.audits)
}

// FailNextAudit makes the next audit write fail with ErrAuditFailed, as a
// broken audit writer would; the write it belongs to then changes nothing.
func (s *ConfigStore) FailNextAudit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failAudit = true
}
