package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// Publisher is an in-memory ports.Publisher. Like Asynq with a task id, it
// absorbs a second envelope with an event_id it already holds.
type Publisher struct {
	mu       sync.Mutex
	tasks    map[string]outbox.Envelope
	order    []string
	attempts map[string]int
	archived map[string]bool

	// FailFunc, when set, is asked before each envelope is stored; a non-nil
	// error is returned for that envelope and nothing is stored.
	FailFunc func(outbox.Envelope) error
	// ActiveFunc, when set, reports whether a held task's consumer is
	// running; Delete refuses such a task with ports.ErrTaskActive.
	ActiveFunc func(eventID string) bool

	// outage.SetDown simulates an unreachable queue: every Publish fails
	// transiently with code QUEUE_UNAVAILABLE, wrapping ports.ErrUnavailable.
	outage
}

var _ ports.Publisher = (*Publisher)(nil)

// NewPublisher returns an empty Publisher.
func NewPublisher() *Publisher {
	return &Publisher{tasks: map[string]outbox.Envelope{}, attempts: map[string]int{}}
}

// Publish implements ports.Publisher.
func (p *Publisher) Publish(ctx context.Context, envs []outbox.Envelope) []error {
	errs := make([]error, len(envs))
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, env := range envs {
		p.attempts[env.EventID]++
		if ctx.Err() != nil || p.on.Load() {
			errs[i] = errors.Join(outbox.Transient("QUEUE_UNAVAILABLE", "queue unreachable"), ports.ErrUnavailable)
			continue
		}
		if env.Validate() != nil {
			errs[i] = outbox.Permanent("ENVELOPE_INVALID", "envelope needs event_id, event_type and an object payload")
			continue
		}
		if p.FailFunc != nil {
			if err := p.FailFunc(env); err != nil {
				errs[i] = err
				continue
			}
		}
		if _, ok := p.tasks[env.EventID]; ok {
			continue
		}
		p.tasks[env.EventID] = env
		p.order = append(p.order, env.EventID)
	}
	return errs
}

// Tasks returns the stored envelopes in first-enqueue order.
func (p *Publisher) Tasks() []outbox.Envelope {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]outbox.Envelope, 0, len(p.order))
	for _, id := range p.order {
		out = append(out, p.tasks[id])
	}
	return out
}

// Attempts returns how many times eventID was offered to Publish.
func (p *Publisher) Attempts(eventID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.attempts[eventID]
}

var _ ports.RetainedTasks = (*Publisher)(nil)

// Delete implements ports.RetainedTasks: it forgets the tasks of eventIDs,
// so their next Publish is stored again. ActiveFunc, when set, marks tasks
// whose consumer is running.
func (p *Publisher) Delete(ctx context.Context, eventIDs []string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil || p.on.Load() {
		return 0, fmt.Errorf("delete retained tasks: queue unreachable: %w", ports.ErrUnavailable)
	}
	n := 0
	for _, id := range eventIDs {
		if _, ok := p.tasks[id]; !ok {
			continue
		}
		if p.ActiveFunc != nil && p.ActiveFunc(id) {
			return n, fmt.Errorf("delete retained task %s: %w", id, ports.ErrTaskActive)
		}
		delete(p.tasks, id)
		delete(p.archived, id)
		p.order = slices.DeleteFunc(p.order, func(o string) bool { return o == id })
		n++
	}
	return n, nil
}

var _ ports.QueueInventory = (*Publisher)(nil)

// TaskStates implements ports.QueueInventory: a held task is pending, or
// archived after Archive.
func (p *Publisher) TaskStates(ctx context.Context, eventIDs []string) ([]ports.QueueState, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil || p.on.Load() {
		return nil, fmt.Errorf("read task states: queue unreachable: %w", ports.ErrUnavailable)
	}
	out := make([]ports.QueueState, len(eventIDs))
	for i, id := range eventIDs {
		if _, ok := p.tasks[id]; ok {
			out[i] = ports.QueuePending
			if p.archived[id] {
				out[i] = ports.QueueArchived
			}
		}
	}
	return out, nil
}

// Archive marks a held task archived (its consumer gave up on it).
func (p *Publisher) Archive(eventID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.archived == nil {
		p.archived = map[string]bool{}
	}
	if _, ok := p.tasks[eventID]; ok {
		p.archived[eventID] = true
	}
}

// Lose forgets the tasks of eventIDs, or every task when none is named,
// as a queue that lost acknowledged writes does.
func (p *Publisher) Lose(eventIDs ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(eventIDs) == 0 {
		eventIDs = slices.Clone(p.order)
	}
	for _, id := range eventIDs {
		delete(p.tasks, id)
		delete(p.archived, id)
		p.order = slices.DeleteFunc(p.order, func(o string) bool { return o == id })
	}
}
