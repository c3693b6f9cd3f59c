package periodic

import (
	"crypto/sha1" //nolint:gosec // a name-based UUID (RFC 9562 version 5) is defined on SHA-1; it is an id, not a secret
	"fmt"
	"time"
)

// namespace is the RFC 9562 name-space UUID of periodic command ids
// (a random v4, fixed forever: changing it changes every id).
var namespace = [16]byte{0x5a, 0x0c, 0x3e, 0x51, 0x7d, 0x2b, 0x4f, 0x0e, 0x9b, 0x64, 0x1f, 0x8a, 0x23, 0xd7, 0x4c, 0x90}

// ID is the stable id of the occurrence of command name scheduled at at:
// a name-based UUID (version 5: SHA-1 over a fixed namespace and
// "<name>@<at, UTC, RFC 3339 with nanoseconds>"), canonical lowercase. Any
// relay, at any time, computes the same id for the same occurrence; the
// occurrence's event carries it as event_id and, unless the command sets
// its own, as request_id and correlation_id.
func ID(name string, at time.Time) string {
	h := sha1.New() //nolint:gosec // see the import
	h.Write(namespace[:])
	h.Write([]byte(name + "@" + at.UTC().Format(time.RFC3339Nano)))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Plan is what one pass decides for one command.
type Plan struct {
	// Commit are the occurrences to commit now, oldest first.
	Commit []Occurrence
	// Skipped counts the missed occurrences the policy dropped (an
	// estimate when a long gap was jumped rather than walked: at least 1
	// whenever any were dropped).
	Skipped int
	// Cursor is the new cursor: every occurrence at or before it has been
	// decided (committed or skipped). It never moves backwards.
	Cursor time.Time
}

// Due decides, for a validated command whose occurrences up to cursor
// are decided, which are due at now under its catch-up policy:
//
//   - none is due before Next(cursor); a clock that went backwards (now
//     before cursor) commits nothing until it passes the cursor again, so
//     an occurrence is never committed twice;
//   - Each: every due occurrence, oldest first, at most MaxCatchUp; the
//     cursor moves to the last one committed;
//   - Once: the latest due occurrence; the ones before it are skipped;
//   - Skip: the latest due occurrence if it is at most Grace old, else
//     none; the rest are skipped.
//
// Under Once and Skip the cursor moves to the latest due occurrence.
func Due(c Command, cursor, now time.Time) Plan {
	plan := Plan{Cursor: cursor}
	first := c.Schedule.Next(cursor)
	if first.IsZero() || first.After(now) {
		return plan
	}
	if c.CatchUp == Each {
		for t := first; !t.IsZero() && !t.After(now) && len(plan.Commit) < c.MaxCatchUp; t = c.Schedule.Next(t) {
			plan.Commit = append(plan.Commit, occurrence(c.Name, t))
			plan.Cursor = t
		}
		return plan
	}
	latest, skipped := latestDue(c.Schedule, first, now)
	plan.Cursor = latest
	plan.Skipped = skipped
	if c.CatchUp == Skip && now.Sub(latest) > c.Grace {
		plan.Skipped++
		return plan
	}
	plan.Commit = []Occurrence{occurrence(c.Name, latest)}
	return plan
}

func occurrence(name string, at time.Time) Occurrence {
	at = at.UTC()
	return Occurrence{Command: name, At: at, ID: ID(name, at)}
}

// walkLimit bounds the occurrences latestDue steps through one by one.
const walkLimit = 1000

// latestDue returns the latest occurrence in [first, now] (first is one)
// and how many before it were passed over. A short gap is walked; a long
// one (a second-by-second schedule after a month's downtime) is found by
// galloping back from now: the first window (now-d, now] that holds an
// occurrence, for d doubling from a second, is then walked, and the
// skipped count is only a lower bound.
func latestDue(s Schedule, first, now time.Time) (time.Time, int) {
	latest, n := first, 0
	for i := 0; i < walkLimit; i++ {
		next := s.Next(latest)
		if next.IsZero() || next.After(now) {
			return latest, n
		}
		latest, n = next, n+1
	}
	for d := time.Second; ; d *= 2 {
		from := now.Add(-d)
		if !from.After(latest) {
			break // the window reaches back to where the walk stopped
		}
		if t := s.Next(from); !t.IsZero() && !t.After(now) {
			for next := s.Next(t); !next.IsZero() && !next.After(now); next = s.Next(t) {
				t = next
			}
			return t, n + 1
		}
	}
	for next := s.Next(latest); !next.IsZero() && !next.After(now); next = s.Next(latest) {
		latest, n = next, n+1
	}
	return latest, n
}
