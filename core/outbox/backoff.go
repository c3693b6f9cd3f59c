package outbox

import (
	"math"
	"time"
)

// Backoff is capped exponential backoff with "equal jitter".
//
// For attempt n (1 for the first failure; values below 1 count as 1) the
// ceiling is c(n) = min(Max, Base * 2^(n-1)), computed without overflow for
// any n. With h = c(n)/2 rounded down, Delay returns (c(n)-h) + rnd*h, so it
// always lies in [c(n)-h, c(n)], that is [ceil(c(n)/2), c(n)], is never
// zero and never exceeds Max. Half of the ceiling is fixed so a
// retry is never immediate; the other half spreads replicas apart.
//
// A zero Base or Max takes the DefaultBackoff value; a Max below Base is
// raised to Base.
type Backoff struct {
	// Base is the ceiling of the first retry delay. Default 1s.
	Base time.Duration
	// Max caps every delay. Default 10m.
	Max time.Duration
}

// DefaultBackoff waits about 0.5-1s after the first failure, doubling up to
// 5-10 minutes.
var DefaultBackoff = Backoff{Base: time.Second, Max: 10 * time.Minute}

func (b Backoff) normalized() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoff.Base
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoff.Max
	}
	if b.Max < b.Base {
		b.Max = b.Base
	}
	return b
}

// Ceiling returns c(attempt), the largest delay Delay can return for attempt.
func (b Backoff) Ceiling(attempt int) time.Duration {
	b = b.normalized()
	c := b.Base
	for i := 1; i < attempt; i++ {
		if c > b.Max-c { // doubling would pass Max (or overflow)
			return b.Max
		}
		c *= 2
	}
	return c
}

// Delay returns the wait before the next attempt after attempt failures. rnd
// is a random number in [0, 1) supplied by the caller; values outside [0, 1]
// (and NaN) are clamped, so the result stays within the documented bounds.
func (b Backoff) Delay(attempt int, rnd float64) time.Duration {
	c := b.Ceiling(attempt)
	span := c / 2
	lo := c - span // ceil(c/2): never zero, so a retry is never immediate
	switch {
	case math.IsNaN(rnd) || rnd < 0:
		rnd = 0
	case rnd > 1:
		rnd = 1
	}
	j := time.Duration(rnd * float64(span))
	if j < 0 || j > span { // float rounding near MaxInt64
		j = span
	}
	return lo + j
}
