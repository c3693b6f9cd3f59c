// Package periodic declares periodic commands and decides their
// occurrences: a command has a name, a schedule and a catch-up policy;
// each occurrence is committed once, across any number of relays, as one
// outbox event whose event_id is derived from the command's name and the
// occurrence's scheduled time (ID). The package is pure: the store that
// locks a command's cursor and appends the events is a port
// (ports.PeriodicCommandStore), and Runner is the service-floor loop that
// drives it. See docs/domains.md, "Periodic commands".
package periodic

import (
	"errors"
	"fmt"
	"time"

	"github.com/july/template/core/outbox"
)

// Schedule says when a command occurs.
type Schedule interface {
	// Next returns the first occurrence strictly after after, or the zero
	// time when there is none. It must be monotonic (Next(t) > t) and
	// absolute: the instants are fixed (whole microseconds at most, as
	// the cursor is stored), not counted from after, or relays and
	// restarts would disagree on them and on their ids.
	Next(after time.Time) time.Time
}

// CatchUp is what a command does with the occurrences it missed while no
// relay ran it (downtime, a stopped deployment, a clock jump forwards).
type CatchUp int

const (
	// Skip commits only an occurrence that is on time (at most
	// Command.Grace old); missed ones are skipped. For work that only
	// makes sense now (a heartbeat, a cache refresh).
	Skip CatchUp = iota + 1
	// Once commits the latest missed occurrence and skips the ones before
	// it: one run stands for all of them (a reconciliation over "since
	// last time").
	Once
	// Each commits every missed occurrence, oldest first, at most
	// Command.MaxCatchUp in one pass; the rest follow in the next passes,
	// so none is skipped (per-period work: a daily statement per day).
	Each
)

func (c CatchUp) String() string {
	switch c {
	case Skip:
		return "skip"
	case Once:
		return "once"
	case Each:
		return "each"
	}
	return fmt.Sprintf("CatchUp(%d)", int(c))
}

// Defaults and bounds of a Command.
const (
	DefaultGrace      = time.Minute
	DefaultMaxCatchUp = 100
	MaxMaxCatchUp     = 10_000
	// MaxNameLen bounds Command.Name (it is the state row's key).
	MaxNameLen = 100
	// MinEvery is the shortest Every interval.
	MinEvery = time.Second
)

func isEvery(s Schedule) bool { _, ok := s.(every); return ok }

// Command is one periodic command a domain declares (apps/domain.Domain
// Commands).
type Command struct {
	// Name identifies the command forever: its state row and every
	// occurrence's event_id derive from it, so renaming it starts a new
	// command. Lowercase dotted words like event types, e.g.
	// "topup.reconcile_daily". Required.
	Name string
	// Schedule says when it occurs: Every(d) or a cron expression
	// (adapters/schedule.Cron). Required.
	Schedule Schedule
	// CatchUp is the policy for missed occurrences. Required.
	CatchUp CatchUp
	// Grace is how late an occurrence may be committed and still count as
	// on time under Skip. Default DefaultGrace.
	Grace time.Duration
	// MaxCatchUp bounds how many occurrences Each commits in one pass
	// (one transaction). Default DefaultMaxCatchUp; at most MaxMaxCatchUp.
	MaxCatchUp int
	// Event builds the occurrence's event. The runner sets EventID to
	// o.ID, Now to the pass's time, and RequestID and CorrelationID to
	// o.ID when they are empty (the PRD's stable command id for work
	// without an HTTP request). Required.
	Event func(o Occurrence) (outbox.NewParams, error)
}

// Occurrence is one scheduled run of a command.
type Occurrence struct {
	Command string
	// At is the scheduled time (UTC), not the time it was committed.
	At time.Time
	// ID is the stable id: ID(Command, At).
	ID string
}

// ConfigError is a refused Command declaration: which command, which
// field, and what to set.
type ConfigError struct {
	Command string
	Field   string
	Want    string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("periodic command %q: %s: %s", e.Command, e.Field, e.Want)
}

// ErrNoCommands is returned by NewRunner when there is nothing to run; a
// service without commands does not start a runner at all.
var ErrNoCommands = errors.New("periodic: no commands; start no runner")

// Validate applies the defaults and checks c; the error is a
// *ConfigError saying what to set.
func (c Command) Validate() (Command, error) {
	bad := func(field, want string) (Command, error) {
		return Command{}, &ConfigError{Command: c.Name, Field: field, Want: want}
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.MaxCatchUp == 0 {
		c.MaxCatchUp = DefaultMaxCatchUp
	}
	switch {
	case len(c.Name) > MaxNameLen || !outbox.IsEventType(c.Name):
		return bad("Name", "use lowercase dotted words like topup.reconcile_daily, at most 100 bytes")
	case c.Schedule == nil:
		return bad("Schedule", "set periodic.Every(d) or a cron schedule (adapters/schedule.Cron)")
	case isEvery(c.Schedule) && time.Duration(c.Schedule.(every)) < MinEvery:
		return bad("Schedule", fmt.Sprintf("Every(%s) is shorter than %s; use a longer interval", time.Duration(c.Schedule.(every)), MinEvery))
	case c.CatchUp != Skip && c.CatchUp != Once && c.CatchUp != Each:
		return bad("CatchUp", "set periodic.Skip, periodic.Once or periodic.Each")
	case c.Grace < 0:
		return bad("Grace", "set a positive duration, or leave it zero for the default")
	case c.MaxCatchUp < 0 || c.MaxCatchUp > MaxMaxCatchUp:
		return bad("MaxCatchUp", fmt.Sprintf("set it within 1..%d, or leave it zero for the default", MaxMaxCatchUp))
	case c.Event == nil:
		return bad("Event", "set the func that builds the occurrence's event")
	}
	return c, nil
}

// every is a fixed-interval schedule aligned to the Unix epoch.
type every time.Duration

// Every returns a schedule occurring at every multiple of d since the
// Unix epoch (so every replica and every restart agree on the instants):
// Every(time.Hour) occurs on the hour, UTC. Command.Validate refuses d
// shorter than MinEvery.
func Every(d time.Duration) Schedule { return every(d) }

// Next implements Schedule.
func (e every) Next(after time.Time) time.Time {
	dn := int64(e)
	if dn <= 0 {
		return time.Time{}
	}
	ns := after.UnixNano()
	k := ns / dn
	if ns%dn < 0 {
		k-- // floor for instants before the epoch
	}
	return time.Unix(0, (k+1)*dn).UTC()
}
