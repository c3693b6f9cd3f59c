package outbox

import "time"

// DefaultMaxAttempts is the attempt budget when Policy.MaxAttempts is zero.
// With DefaultBackoff the last retry comes roughly 10-20 minutes after the
// first failure.
const DefaultMaxAttempts = 10

// Policy decides what happens to an event after a failed enqueue.
type Policy struct {
	// MaxAttempts is how many delivery attempts an event gets in total,
	// including the first. Zero or less means DefaultMaxAttempts.
	MaxAttempts int
	// Backoff spaces the attempts. Zero fields take DefaultBackoff values.
	Backoff Backoff
}

// Attempts returns the attempt budget in effect: MaxAttempts, or
// DefaultMaxAttempts when that is zero or less.
func (p Policy) Attempts() int {
	if p.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return p.MaxAttempts
}

// FailureDecision is the row update for one failed attempt.
type FailureDecision struct {
	// Status is Pending (will retry) or Failed (final).
	Status Status
	// NextAttemptAt is when a Pending event becomes claimable again; for a
	// Failed event it is now, and unused.
	NextAttemptAt time.Time
	// RetryCount is the new retry_count: failed attempts including this one.
	RetryCount int
	// Final is true when Status is Failed and an alert is due.
	Final bool
	// Code is the stable last_error_code, see ErrorCode.
	Code string
	// Message is the truncated last_error_message, see ErrorMessage. The
	// caller redacts it before persisting.
	Message string
	// Class is how err was classified.
	Class Class
}

// OnFailure decides the outcome of a failed attempt on an event that had
// retryCount failed attempts before this one. A permanent error, or a
// transient one that uses up the last of MaxAttempts (retryCount+1 >=
// MaxAttempts), fails the event for good; otherwise it goes back to Pending
// after Backoff.Delay(retryCount+1, rnd). rnd is a random number in [0, 1).
func (p Policy) OnFailure(retryCount int, err error, now time.Time, rnd float64) FailureDecision {
	maxAttempts := p.Attempts()
	attempts := max(retryCount, 0) + 1
	d := FailureDecision{
		Status:        Pending,
		RetryCount:    attempts,
		NextAttemptAt: now,
		Code:          ErrorCode(err),
		Message:       ErrorMessage(err),
		Class:         Classify(err),
	}
	if d.Code == "" { // a nil err is a caller bug; still record a code
		d.Code = DefaultErrorCode
	}
	if d.Class == ClassPermanent || attempts >= maxAttempts {
		d.Status, d.Final = Failed, true
		return d
	}
	d.NextAttemptAt = now.Add(p.Backoff.Delay(attempts, rnd))
	return d
}
