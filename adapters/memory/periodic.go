package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/july/template/core/ports"
)

// PeriodicCommands is the in-memory twin of pgperiodic.Store
// (ports.PeriodicCommandStore): cursors in a map, events appended to an
// OutboxStore. One mutex serialises every Advance, which is what the row
// lock does for one command in Postgres; Hold plays another caller
// holding a command. SetDown simulates an outage.
type PeriodicCommands struct {
	outage
	mu      sync.Mutex
	out     *OutboxStore
	cursors map[string]time.Time
	held    map[string]bool
}

var _ ports.PeriodicCommandStore = (*PeriodicCommands)(nil)

// NewPeriodicCommands returns an empty store that appends to out.
func NewPeriodicCommands(out *OutboxStore) *PeriodicCommands {
	return &PeriodicCommands{out: out, cursors: map[string]time.Time{}, held: map[string]bool{}}
}

// Hold marks command as held by another caller until release is called.
func (s *PeriodicCommands) Hold(command string) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[command] = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.held, command)
	}
}

// Advance implements ports.PeriodicCommandStore.
func (s *PeriodicCommands) Advance(ctx context.Context, command string, now time.Time, decide ports.PeriodicDecideFunc) (ports.PeriodicAdvance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("periodic command %s", command); err != nil {
		return ports.PeriodicAdvance{}, err
	}
	cursor, ok := s.cursors[command]
	switch {
	case !ok:
		s.cursors[command] = now
		return ports.PeriodicAdvance{Created: true}, nil
	case s.held[command]:
		return ports.PeriodicAdvance{Busy: true}, nil
	}
	events, next, err := decide(cursor)
	if err != nil {
		return ports.PeriodicAdvance{}, fmt.Errorf("periodic command %s: %w", command, err)
	}
	if next.Before(cursor) {
		return ports.PeriodicAdvance{}, fmt.Errorf("periodic command %s: the cursor may not move back from %s to %s", command,
			cursor.Format(time.RFC3339Nano), next.Format(time.RFC3339Nano))
	}
	var res ports.PeriodicAdvance
	fresh := events[:0:0]
	for _, ev := range events {
		_, err := s.out.Get(ctx, ev.EventID)
		switch {
		case err == nil:
			res.Existing++
		case errors.Is(err, ports.ErrNotFound):
			fresh = append(fresh, ev)
		default:
			return ports.PeriodicAdvance{}, fmt.Errorf("periodic command %s: %w", command, err)
		}
	}
	if err := s.out.Append(ctx, fresh...); err != nil {
		return ports.PeriodicAdvance{}, fmt.Errorf("periodic command %s: %w", command, err)
	}
	res.Appended = len(fresh)
	s.cursors[command] = next
	return res, nil
}
