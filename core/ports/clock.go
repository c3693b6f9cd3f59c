package ports

import "time"

// Clock tells the time. Loops that need "now" take a Clock so tests can
// drive time; everything else takes now as an argument.
type Clock interface {
	Now() time.Time
}

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }
