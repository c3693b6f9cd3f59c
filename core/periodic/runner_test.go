package periodic_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/july/template/core/periodic"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
)

// nopStore stands in for a store in constructor checks; no pass runs.
type nopStore struct{}

func (nopStore) Advance(context.Context, string, time.Time, ports.PeriodicDecideFunc) (ports.PeriodicAdvance, error) {
	return ports.PeriodicAdvance{}, nil
}

func TestNewRunnerRefusesWhatCannotRun(t *testing.T) {
	c := cmd(t, periodic.Each, time.Minute, 0)
	if _, err := periodic.NewRunner(nopStore{}, nil, ports.SystemClock, periodic.RunnerConfig{}); !errors.Is(err, periodic.ErrNoCommands) {
		t.Errorf("no commands: got %v, want ErrNoCommands", err)
	}
	var se *startstop.ConfigError
	if _, err := periodic.NewRunner(nil, []periodic.Command{c}, ports.SystemClock, periodic.RunnerConfig{}); !errors.As(err, &se) {
		t.Errorf("no store: got %v, want a *startstop.ConfigError", err)
	}
	if _, err := periodic.NewRunner(nopStore{}, []periodic.Command{c}, ports.SystemClock, periodic.RunnerConfig{Every: time.Millisecond}); !errors.As(err, &se) || se.Field != "Every" {
		t.Errorf("Every 1ms: got %v, want a *startstop.ConfigError on Every", err)
	}
	var ce *periodic.ConfigError
	if _, err := periodic.NewRunner(nopStore{}, []periodic.Command{c, c}, ports.SystemClock, periodic.RunnerConfig{}); !errors.As(err, &ce) || ce.Field != "Name" {
		t.Errorf("a command declared twice: got %v, want a *periodic.ConfigError on Name", err)
	}
	bad := c
	bad.Event = nil
	if _, err := periodic.NewRunner(nopStore{}, []periodic.Command{bad}, ports.SystemClock, periodic.RunnerConfig{}); !errors.As(err, &ce) || ce.Field != "Event" {
		t.Errorf("a command without Event: got %v, want a *periodic.ConfigError on Event", err)
	}
	if _, err := periodic.NewRunner(nopStore{}, []periodic.Command{c}, ports.SystemClock, periodic.RunnerConfig{}); err != nil {
		t.Errorf("a valid runner: %v", err)
	}
}
