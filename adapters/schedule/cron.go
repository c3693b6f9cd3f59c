// Package schedule parses cron expressions into periodic.Schedule values
// (github.com/netresearch/go-cron, the maintained fork of robfig/cron/v3
// with ISC cron's daylight-saving rules; core/periodic stays free of it). Fixed
// intervals need no parser: periodic.Every.
package schedule

import (
	"fmt"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"

	"github.com/july/template/core/periodic"
)

// Error is a refused cron expression: what was given and what to write.
type Error struct {
	Spec   string
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("schedule: cron %q: %s", e.Spec, e.Reason) }

// parser reads the standard five fields (minute hour day-of-month month
// day-of-week) and the @daily-style descriptors.
var parser = cron.MustNewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Cron returns the schedule of a standard five-field cron expression
// ("0 2 * * *" is 02:00 every day) evaluated in loc, so every relay
// agrees whatever its TZ; a "CRON_TZ=Asia/Shanghai " prefix overrides
// loc. "@every <d>" is refused: it counts from an arbitrary start, so two
// relays would not agree on its instants; use periodic.Every(d), aligned
// to the epoch. A refused spec is an *Error.
func Cron(spec string, loc *time.Location) (periodic.Schedule, error) {
	if loc == nil {
		return nil, &Error{Spec: spec, Reason: "no time zone; pass one, e.g. time.UTC or the location of Asia/Shanghai"}
	}
	if strings.HasPrefix(strings.TrimSpace(spec), "@every") {
		return nil, &Error{Spec: spec, Reason: "@every is not aligned to fixed instants; use periodic.Every(d) instead"}
	}
	s, err := parser.Parse(spec)
	if err != nil {
		return nil, &Error{Spec: spec, Reason: err.Error() + `; write five fields "minute hour day-of-month month day-of-week", e.g. "0 2 * * *"`}
	}
	return cronSchedule{s: s, loc: loc}, nil
}

// MustCron is Cron for a literal in a domain's declaration: it panics on
// a refused spec, which a test of the declaration catches.
func MustCron(spec string, loc *time.Location) periodic.Schedule {
	s, err := Cron(spec, loc)
	if err != nil {
		panic(err)
	}
	return s
}

type cronSchedule struct {
	s   cron.Schedule
	loc *time.Location
}

// Next implements periodic.Schedule (zero when no occurrence falls within
// the next five years, as go-cron says).
//
// On the night the clocks fall back the repeated hour reads twice; an
// occurrence in it runs at its first reading only (ISC cron's rule, which
// go-cron's scheduler applies but its Schedule.Next does not): each
// reading is a different instant, so the periodic runner would otherwise
// commit two occurrences.
func (c cronSchedule) Next(after time.Time) time.Time {
	t := c.s.Next(after.In(c.loc))
	for !t.IsZero() && repeated(t) {
		t = c.s.Next(t)
	}
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// repeated reports that t's wall clock reading also occurred earlier, at
// the same reading under the offset in force before a fall-back.
func repeated(t time.Time) bool {
	_, now := t.Zone()
	_, before := t.Add(-3 * time.Hour).Zone() // no zone moves more than 3h at once
	if before <= now {
		return false
	}
	first := t.Add(-time.Duration(before-now) * time.Second)
	return first.Format(time.DateTime) == t.Format(time.DateTime)
}
