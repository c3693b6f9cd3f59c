package periodic_test

import (
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/periodic"
)

// fakeClock is a settable ports.Clock-like time source for the rule.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time      { return c.now }
func (c *fakeClock) Add(d time.Duration) { c.now = c.now.Add(d) }
func (c *fakeClock) Set(t time.Time)     { c.now = t }

var canonical = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestIDIsAStableNameBasedUUID(t *testing.T) {
	at := time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	// The same construction as RFC 9562 version 5 (Python: uuid.uuid5(
	// UUID("5a0c3e51-7d2b-4f0e-9b64-1f8a23d74c90"), name)): an id any
	// other tool can recompute.
	if got, want := periodic.ID("topup.reconcile_daily", at), "c50e2deb-55e3-52cc-a294-b95a281f2e74"; got != want {
		t.Fatalf("ID = %s, want %s", got, want)
	}
	shanghai := time.FixedZone("CST", 8*3600)
	if periodic.ID("topup.reconcile_daily", at.In(shanghai)) != periodic.ID("topup.reconcile_daily", at) {
		t.Fatal("the id depends on the time zone the time is expressed in; it must depend on the instant only")
	}
	seen := map[string]bool{}
	for _, name := range []string{"a.b", "a.c"} {
		for i := range 100 {
			id := periodic.ID(name, at.Add(time.Duration(i)*time.Second))
			if !canonical.MatchString(id) {
				t.Fatalf("ID %q is not a canonical lowercase version-5 uuid", id)
			}
			if seen[id] {
				t.Fatalf("ID %s repeats for another command or time", id)
			}
			seen[id] = true
		}
	}
}

func TestEveryIsAlignedToTheEpoch(t *testing.T) {
	s := periodic.Every(7 * time.Second)
	after := time.Unix(1_000_000_003, 5).In(time.FixedZone("CST", 8*3600))
	next := s.Next(after)
	if next.Unix()%7 != 0 || next.Nanosecond() != 0 || !next.After(after) || next.Sub(after) > 7*time.Second {
		t.Fatalf("Every(7s).Next(%s) = %s; want the next multiple of 7 s since the epoch", after, next)
	}
	if again := s.Next(next); again.Sub(next) != 7*time.Second {
		t.Fatalf("Next(an occurrence) = %s, want the one 7 s later", again)
	}
	if h := periodic.Every(time.Hour).Next(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)); !h.Equal(time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)) {
		t.Fatalf("Every(1h) after 10:00 = %s, want 11:00", h)
	}
}

func cmd(t *testing.T, policy periodic.CatchUp, every time.Duration, maxCatchUp int) periodic.Command {
	t.Helper()
	c, err := periodic.Command{
		Name: "test.tick", Schedule: periodic.Every(every), CatchUp: policy, MaxCatchUp: maxCatchUp,
		Event: func(o periodic.Occurrence) (outbox.NewParams, error) {
			return outbox.NewParams{EventType: "test.tick", PayloadVersion: 1, AggregateType: "tick", AggregateID: o.ID,
				ResourceType: "tick", ResourceID: o.ID, Payload: map[string]any{"at": o.At}}, nil
		},
	}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ledger plays the store: one cursor, and every committed id counted.
type ledger struct {
	t         *testing.T
	c         periodic.Command
	cursor    time.Time
	committed map[string]time.Time
	order     []time.Time
}

func newLedger(t *testing.T, c periodic.Command, start time.Time) *ledger {
	return &ledger{t: t, c: c, cursor: start, committed: map[string]time.Time{}}
}

func (l *ledger) pass(now time.Time) periodic.Plan {
	l.t.Helper()
	p := periodic.Due(l.c, l.cursor, now)
	if p.Cursor.Before(l.cursor) {
		l.t.Fatalf("cursor moved backwards: %s -> %s", l.cursor, p.Cursor)
	}
	for _, o := range p.Commit {
		if o.At.After(now) {
			l.t.Fatalf("committed %s before it was due (now %s)", o.At, now)
		}
		if _, dup := l.committed[o.ID]; dup {
			l.t.Fatalf("occurrence %s committed twice", o.At)
		}
		if o.ID != periodic.ID(l.c.Name, o.At) {
			l.t.Fatalf("occurrence %s carries id %s, not ID(name, at)", o.At, o.ID)
		}
		l.committed[o.ID] = o.At
		l.order = append(l.order, o.At)
		if _, err := periodic.Build(l.c, o, now); err != nil {
			l.t.Fatalf("build: %v", err)
		}
	}
	l.cursor = p.Cursor
	return p
}

// noGaps fails unless the committed occurrences are every occurrence of
// the schedule from the first to the last, in order.
func (l *ledger) noGaps() {
	l.t.Helper()
	for i := 1; i < len(l.order); i++ {
		if want := l.c.Schedule.Next(l.order[i-1]); !l.order[i].Equal(want) {
			l.t.Fatalf("after %s the next committed is %s, want %s: a gap or a reorder", l.order[i-1], l.order[i], want)
		}
	}
}

var t0 = time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)

func TestEachCommitsEveryOccurrenceOnceThroughClockJumps(t *testing.T) {
	c := cmd(t, periodic.Each, time.Minute, 10)
	clk := &fakeClock{now: t0.Add(30 * time.Second)}
	l := newLedger(t, c, clk.Now())
	for range 50 { // steady passes every 20 s
		clk.Add(20 * time.Second)
		l.pass(clk.Now())
	}
	steady := len(l.order)
	if steady != 17 {
		t.Fatalf("1000 s of passes committed %d occurrences (minutes 1..17), want 17", steady)
	}
	// The clock jumps back an hour (NTP step, a VM restored): nothing is
	// committed again, nothing new until time passes the cursor.
	clk.Add(-time.Hour)
	for range 100 {
		clk.Add(20 * time.Second)
		if p := l.pass(clk.Now()); len(p.Commit) > 0 && clk.Now().Before(t0.Add(1080*time.Second)) {
			t.Fatalf("committed %v while the clock was behind the cursor", p.Commit)
		}
	}
	// The clock jumps ahead a day (or the relays were down a day): Each
	// catches up at most 10 per pass, oldest first, without gaps.
	clk.Add(24 * time.Hour)
	passes := 0
	for {
		p := l.pass(clk.Now())
		passes++
		if len(p.Commit) > 10 {
			t.Fatalf("one pass committed %d, more than MaxCatchUp 10", len(p.Commit))
		}
		if len(p.Commit) < 10 {
			break
		}
	}
	if passes < 100 {
		t.Fatalf("a day of minutes caught up in %d passes of at most 10", passes)
	}
	l.noGaps()
	if last := l.order[len(l.order)-1]; clk.Now().Sub(last) >= time.Minute {
		t.Fatalf("caught up to %s, but now is %s", last, clk.Now())
	}
}

func TestOnceCommitsTheLatestMissedOccurrence(t *testing.T) {
	c := cmd(t, periodic.Once, time.Hour, 0)
	l := newLedger(t, c, t0.Add(time.Minute))
	now := t0.Add(5*time.Hour + 10*time.Minute) // 01:00..05:00 missed
	p := l.pass(now)
	if len(p.Commit) != 1 || !p.Commit[0].At.Equal(t0.Add(5*time.Hour)) || p.Skipped != 4 {
		t.Fatalf("Once after missing 5 hours: commit %v skipped %d; want only 05:00, 4 skipped", p.Commit, p.Skipped)
	}
	if p := l.pass(now.Add(time.Minute)); len(p.Commit) != 0 {
		t.Fatalf("a second pass in the same hour committed %v", p.Commit)
	}
	// A gap far longer than the walk: a second-by-second command down for
	// 30 days still finds the latest occurrence (by galloping back).
	c = cmd(t, periodic.Once, time.Second, 0)
	l = newLedger(t, c, t0)
	now = t0.Add(30*24*time.Hour + 1500*time.Millisecond)
	p = l.pass(now)
	if len(p.Commit) != 1 || !p.Commit[0].At.Equal(now.Truncate(time.Second)) || p.Skipped < 1 {
		t.Fatalf("Once after 30 days of seconds: commit %v skipped %d; want only %s", p.Commit, p.Skipped, now.Truncate(time.Second))
	}
}

func TestSkipCommitsOnlyOnTimeOccurrences(t *testing.T) {
	c := cmd(t, periodic.Skip, time.Hour, 0) // Grace: DefaultGrace (1 min)
	l := newLedger(t, c, t0.Add(time.Minute))
	if p := l.pass(t0.Add(time.Hour + 30*time.Second)); len(p.Commit) != 1 {
		t.Fatalf("an occurrence 30 s old is on time under Skip; got %v", p.Commit)
	}
	p := l.pass(t0.Add(4*time.Hour + 5*time.Minute)) // 02:00, 03:00 missed; 04:00 is 5 min late
	if len(p.Commit) != 0 || p.Skipped != 3 || !p.Cursor.Equal(t0.Add(4*time.Hour)) {
		t.Fatalf("Skip after downtime: commit %v skipped %d cursor %s; want nothing, 3 skipped, cursor 04:00", p.Commit, p.Skipped, p.Cursor)
	}
	if p := l.pass(t0.Add(5*time.Hour - time.Nanosecond)); len(p.Commit) != 0 {
		t.Fatalf("a nanosecond before 05:00 committed %v", p.Commit)
	}
	if p := l.pass(t0.Add(5*time.Hour + 10*time.Second)); len(p.Commit) != 1 {
		t.Fatalf("the next on-time occurrence is committed again; got %v", p.Commit)
	}
}

func TestValidateSaysWhatToSet(t *testing.T) {
	ok := cmd(t, periodic.Each, time.Minute, 0)
	for name, mutate := range map[string]func(*periodic.Command){
		"Name":       func(c *periodic.Command) { c.Name = "Bad Name" },
		"Schedule":   func(c *periodic.Command) { c.Schedule = nil },
		"CatchUp":    func(c *periodic.Command) { c.CatchUp = 0 },
		"MaxCatchUp": func(c *periodic.Command) { c.MaxCatchUp = periodic.MaxMaxCatchUp + 1 },
		"Event":      func(c *periodic.Command) { c.Event = nil },
		"Grace":      func(c *periodic.Command) { c.Grace = -time.Second },
	} {
		c := ok
		mutate(&c)
		_, err := c.Validate()
		var ce *periodic.ConfigError
		if !errors.As(err, &ce) || ce.Field != name || ce.Want == "" {
			t.Errorf("%s: got %v, want a *periodic.ConfigError for %s saying what to set", name, err, name)
		}
	}
	c := ok
	c.Schedule = periodic.Every(500 * time.Millisecond)
	if _, err := c.Validate(); err == nil {
		t.Error("Every(500ms) was accepted; the minimum is MinEvery")
	}
}
