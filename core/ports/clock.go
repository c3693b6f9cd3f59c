package ports

import "time"

// Clock tells the time and waits. Loops that need "now" or a pause take a
// Clock so tests can drive time; everything else takes now as an argument.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// ClockFunc adapts a function to Clock: Now is f(); After waits in real
// time (time.After).
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }

// After returns time.After(d).
func (f ClockFunc) After(d time.Duration) <-chan time.Time { return time.After(d) }

// SystemClock is the wall clock.
var SystemClock Clock = ClockFunc(time.Now)
