package outbox

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/july/template/core/lease"
)

// Replay request limits.
const (
	// MaxOperatorLen bounds ReplayRequest.Operator and BatchID.
	MaxOperatorLen = 128
	// MaxReasonLen bounds ReplayRequest.Reason.
	MaxReasonLen = 512
)

// ReplayRequest is who replays which batch and why. The caller writes it to
// the audit trail; Replay only validates it.
type ReplayRequest struct {
	// Operator is the authenticated operator's id.
	Operator string
	// Reason says why, in words an auditor understands (Chinese is fine).
	Reason string
	// BatchID groups the events replayed by one operator action.
	BatchID string
}

// Validate returns a *ValidationError for the first missing, blank,
// over-long or unprintable field (see CheckAuditText).
func (r ReplayRequest) Validate() error {
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"operator", r.Operator, MaxOperatorLen},
		{"reason", r.Reason, MaxReasonLen},
		{"batch_id", r.BatchID, MaxOperatorLen},
	} {
		switch {
		case strings.TrimSpace(f.v) == "":
			return &ValidationError{Field: f.name, Reason: "is empty; a replay must say who, why and which batch"}
		case len(f.v) > f.max:
			return &ValidationError{Field: f.name, Reason: "is longer than " + strconv.Itoa(f.max) + " bytes"}
		}
		if err := CheckAuditText(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// CheckAuditText returns a *ValidationError when v, an operator's free
// text bound for the audit trail (who, why), is not valid UTF-8 or holds a
// control or format character: CR and LF forge extra rows in a listing,
// ESC drives the reader's terminal, and bidi overrides disguise text.
// Spaces and any printable text (Chinese, JSON) are fine.
func CheckAuditText(field, v string) error {
	if !utf8.ValidString(v) {
		return &ValidationError{Field: field, Reason: "is not valid UTF-8"}
	}
	for i, r := range v {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return &ValidationError{Field: field, Reason: fmt.Sprintf("holds the control character %U at byte %d; "+
				"write it on one line with printable characters only", r, i)}
		}
	}
	return nil
}

// CanReplay returns nil when ev may be replayed at now: it is Failed, or it
// is stuck, meaning Delivering with an expired lease or Pending with a
// NextAttemptAt at least stuckAfter before now. Otherwise it returns an
// error wrapping ErrNotReplayable; Delivered events never qualify. A
// stuckAfter of zero or less makes no Pending event stuck.
func CanReplay(ev Event, now time.Time, stuckAfter time.Duration) error {
	switch {
	case ev.Status == Failed:
		return nil
	case LeaseExpired(ev, now):
		return nil
	case ev.Status == Pending && stuckAfter > 0 && now.Sub(ev.NextAttemptAt) >= stuckAfter:
		return nil
	}
	return fmt.Errorf("replay event %s: %w: status %s; only failed or stuck events can be replayed", ev.EventID, ErrNotReplayable, ev.Status)
}

// Replay makes a replayable event (see CanReplay) Pending and due at now
// with RetryCount 0 and the lease owner cleared (the fencing token is kept).
// EventID, payload and ids are unchanged, so consumers see the same event
// again; LastErrorCode and LastErrorMessage are kept as history. It returns
// req's *ValidationError or CanReplay's error.
func Replay(ev Event, req ReplayRequest, now time.Time, stuckAfter time.Duration) (Event, error) {
	if err := req.Validate(); err != nil {
		return ev, err
	}
	if err := CanReplay(ev, now, stuckAfter); err != nil {
		return ev, err
	}
	ev.Status = Pending
	ev.RetryCount = 0
	ev.NextAttemptAt = now
	ev.Lease = lease.Lease{Token: ev.Lease.Token}
	ev.UpdatedAt = now
	return ev, nil
}
