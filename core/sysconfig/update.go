package sysconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// UpdateRequest is one PUT /api/v1/system-configs/{key}.
type UpdateRequest struct {
	Key string
	// Raw is the body's "value" member, JSON of the key's type.
	Raw json.RawMessage
	// ExpectedVersion is the body's optional "version".
	ExpectedVersion *int64
	// Actor is the authenticated super admin's id.
	Actor string
}

// Plan is an accepted update: what to write and what to audit.
type Plan struct {
	Spec  Spec
	Value Value
	// NewText is the canonical text to store in config_value.
	NewText string
	// BaseVersion is the version the plan was computed against (0: no row).
	// The adapter must write with a compare-and-set on it (insert when 0,
	// UPDATE ... WHERE version = BaseVersion otherwise) and, when that
	// affects no row, answer with a *VersionConflictError.
	BaseVersion int64
	// NewVersion is BaseVersion+1.
	NewVersion int64
	// OldMasked and NewMasked are the old and new text, masked when sensitive.
	OldMasked, NewMasked string
	// Decision is the accepted update decision, recorded as the attempt's
	// audit record.
	Decision UpdateDecision
}

// Row returns the tb_system_config row to write, updated by the request's
// actor at now. Registry metadata wins over whatever the old row said.
func (p Plan) Row(now time.Time) Stored {
	return Stored{
		Key: p.Spec.Key, Value: p.NewText, Type: p.Spec.Type, Module: p.Spec.Module,
		Description: p.Spec.Description, ReadOnly: p.Spec.ReadOnly,
		Version: p.NewVersion, UpdatedAt: now, UpdatedBy: p.Decision.Actor,
	}
}

// PlanUpdate runs the update checks in a fixed order, so a request breaking
// several rules always gets the same answer: registration, read-only
// (the spec's flag or the stored row's), typed parse, constraints, then the
// optimistic version (current version is 0 when current is nil). The first
// failure is returned as ErrKeyNotRegistered, ErrReadOnly, *ValueError or
// *VersionConflictError; the caller should then record
// RejectedDecision(reg, req, current, err).
func PlanUpdate(reg *Registry, req UpdateRequest, current *Stored) (Plan, error) {
	spec, ok := reg.Lookup(req.Key)
	if !ok {
		return Plan{}, fmt.Errorf("update %q: %w", req.Key, ErrKeyNotRegistered)
	}
	if spec.ReadOnly || (current != nil && current.ReadOnly) {
		return Plan{}, fmt.Errorf("update %q: %w", req.Key, ErrReadOnly)
	}
	v, err := spec.ParseJSON(req.Raw)
	if err != nil {
		return Plan{}, err
	}
	if err := spec.Check(v); err != nil {
		return Plan{}, err
	}
	base := currentVersion(current)
	if req.ExpectedVersion != nil && *req.ExpectedVersion != base {
		return Plan{}, &VersionConflictError{Key: req.Key, Expected: *req.ExpectedVersion, Actual: base}
	}
	p := Plan{
		Spec: spec, Value: v, NewText: v.Text(),
		BaseVersion: base, NewVersion: base + 1,
		OldMasked: oldMasked(&spec, current), NewMasked: MaskedText(&spec, v.Text()),
	}
	p.Decision = UpdateDecision{
		Key: req.Key, Actor: req.Actor, Action: ActionUpdate, Outcome: OutcomeAccepted,
		OldValue: p.OldMasked, NewValue: p.NewMasked, Version: p.NewVersion,
	}
	return p, nil
}

func currentVersion(current *Stored) int64 {
	if current == nil {
		return 0
	}
	return current.Version
}

func oldMasked(spec *Spec, current *Stored) string {
	if current == nil {
		return ""
	}
	return MaskedText(spec, current.Value)
}

// ActionUpdate is the audit action of a config update attempt.
const ActionUpdate = "config.update"

// Outcome says whether an audited attempt was applied.
type Outcome string

// Audit outcomes.
const (
	OutcomeAccepted Outcome = "accepted"
	OutcomeRejected Outcome = "rejected"
)

// UpdateDecision is the config pipeline's decision on one update attempt,
// accepted or not; configsvc maps it onto ports.AuditRecord for the audit
// writer. Values are masked for sensitive and unregistered keys.
type UpdateDecision struct {
	Key    string
	Actor  string
	Action string
	// Outcome is accepted or rejected.
	Outcome Outcome
	// Code is the machine code of a rejection; "" when accepted.
	Code string
	// Reason is the Chinese, value-free explanation of a rejection.
	Reason string
	// OldValue is the masked stored text; "" when there was no row.
	OldValue string
	// NewValue is the masked new text; for a rejection, the masked attempted
	// text when it parsed as the key's type, else "".
	NewValue string
	// Version is the new version when accepted, the current one when rejected.
	Version int64
}

// RejectedDecision builds the decision (and so the audit record) of a
// refused attempt, including failures the adapter detects itself (a lost
// compare-and-set, a database error). Code falls back to "CONFIG_UPDATE_FAILED" for errors this package
// does not know, and Reason never carries err's text, which may hold values.
func RejectedDecision(reg *Registry, req UpdateRequest, current *Stored, err error) UpdateDecision {
	var spec *Spec
	if reg != nil {
		if s, ok := reg.Lookup(req.Key); ok {
			spec = &s
		}
	}
	rec := UpdateDecision{
		Key: req.Key, Actor: req.Actor, Action: ActionUpdate, Outcome: OutcomeRejected,
		Code: Code(err), Reason: Message(err), OldValue: oldMasked(spec, current),
		Version: currentVersion(current),
	}
	var vc *VersionConflictError
	if errors.As(err, &vc) {
		rec.Version = vc.Actual
	}
	if rec.Code == "" {
		rec.Code, rec.Reason = CodeUpdateFailed, "配置更新失败，请稍后重试"
	}
	if spec != nil {
		if v, perr := spec.ParseJSON(req.Raw); perr == nil {
			rec.NewValue = MaskedText(spec, v.Text())
		}
	}
	return rec
}

// CodeUpdateFailed is the audit code of a rejection caused by an error this
// package does not classify (usually infrastructure); it maps to a 5xx.
const CodeUpdateFailed = "CONFIG_UPDATE_FAILED"
