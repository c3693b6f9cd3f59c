package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
)

// TaskStore is an in-memory ports.TaskStore: one business task table as a
// map, changed only through the core/tasks rules under one mutex. SetDown
// simulates an outage of the database behind it.
type TaskStore struct {
	outage
	mu   sync.Mutex
	rows map[string]tasks.Task
}

var _ ports.TaskStore = (*TaskStore)(nil)

// NewTaskStore returns an empty store.
func NewTaskStore() *TaskStore {
	return &TaskStore{rows: map[string]tasks.Task{}}
}

// Create implements ports.TaskStore.
func (s *TaskStore) Create(_ context.Context, id string, total int64, now time.Time) (tasks.Task, error) {
	t, err := tasks.NewTask(id, total, now)
	if err != nil {
		return tasks.Task{}, fmt.Errorf("create task: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("create task %q", id); err != nil {
		return tasks.Task{}, err
	}
	if _, dup := s.rows[id]; dup {
		return tasks.Task{}, fmt.Errorf("create task %q: %w: id exists", id, ports.ErrConflict)
	}
	s.rows[id] = cloneTask(t)
	return cloneTask(t), nil
}

// Get implements ports.TaskStore.
func (s *TaskStore) Get(_ context.Context, id string) (tasks.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("get task %q", id); err != nil {
		return tasks.Task{}, err
	}
	t, ok := s.rows[id]
	if !ok {
		return tasks.Task{}, fmt.Errorf("get task %q: %w", id, ports.ErrNotFound)
	}
	return cloneTask(t), nil
}

// Claim implements ports.TaskStore.
func (s *TaskStore) Claim(_ context.Context, id, owner string, leaseFor time.Duration, now time.Time) (tasks.Task, error) {
	return s.apply(id, func(t tasks.Task) (tasks.Task, error) { return t.Claim(owner, now, leaseFor) })
}

// Renew implements ports.TaskStore.
func (s *TaskStore) Renew(_ context.Context, id, owner string, token int64, leaseFor time.Duration, now time.Time) error {
	_, err := s.apply(id, func(t tasks.Task) (tasks.Task, error) {
		next, err := t.Renew(owner, token, now, leaseFor)
		return next, holderError(t, owner, token, now, err)
	})
	return err
}

// RecordProgress implements ports.TaskStore.
func (s *TaskStore) RecordProgress(_ context.Context, id, owner string, token int64, success, failed int64, now time.Time) (tasks.Task, error) {
	return s.apply(id, func(t tasks.Task) (tasks.Task, error) {
		next, err := t.RecordProgress(owner, token, success, failed, now)
		return next, holderError(t, owner, token, now, err)
	})
}

// SetTotal implements ports.TaskStore.
func (s *TaskStore) SetTotal(_ context.Context, id, owner string, token int64, total int64, now time.Time) (tasks.Task, error) {
	return s.apply(id, func(t tasks.Task) (tasks.Task, error) {
		next, err := t.SetTotal(owner, token, total, now)
		return next, holderError(t, owner, token, now, err)
	})
}

// Complete implements ports.TaskStore.
func (s *TaskStore) Complete(_ context.Context, id, owner string, token int64, now time.Time) (tasks.Task, error) {
	return s.apply(id, func(t tasks.Task) (tasks.Task, error) {
		next, err := t.Complete(owner, token, now)
		return next, holderError(t, owner, token, now, err)
	})
}

// Fail implements ports.TaskStore.
func (s *TaskStore) Fail(_ context.Context, id, owner string, token int64, summary tasks.Summary, now time.Time) (tasks.Task, error) {
	return s.apply(id, func(t tasks.Task) (tasks.Task, error) {
		next, err := t.Fail(owner, token, summary, now)
		return next, holderError(t, owner, token, now, err)
	})
}

// Cancel implements ports.TaskStore.
func (s *TaskStore) Cancel(_ context.Context, id string, now time.Time, cancellable bool) (tasks.Task, error) {
	return s.apply(id, func(t tasks.Task) (tasks.Task, error) { return t.Cancel(cancellable, now) })
}

// RecoverExpired implements ports.TaskStore, longest expired first.
func (s *TaskStore) RecoverExpired(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return s.recover(ctx, now, limit, nil)
}

// TaskTable registers the store with the task-recovery sweep as name, the
// way pgtasks.NewTaskTable does: Recover moves a batch back to Pending only
// if deliver succeeds for every task of it, so a failed call changes
// nothing. deliver runs under the store's lock and must not call the store.
func (s *TaskStore) TaskTable(name string, deliver func(ctx context.Context, id string) error) ports.TaskTable {
	return ports.TaskTable{Name: name, Store: s, Recover: func(ctx context.Context, now time.Time, limit int) ([]string, error) {
		return s.recover(ctx, now, limit, deliver)
	}}
}

// recover is RecoverExpired, calling deliver (when set) for each task
// before any is stored.
func (s *TaskStore) recover(ctx context.Context, now time.Time, limit int, deliver func(context.Context, string) error) ([]string, error) {
	if limit < 1 {
		return nil, fmt.Errorf("recover expired tasks: limit %d; pass 1 or more", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("recover expired tasks"); err != nil {
		return nil, err
	}
	var expired []tasks.Task
	for _, t := range s.rows {
		if t.Status == tasks.Processing && t.Lease.Claimable(now) {
			expired = append(expired, t)
		}
	}
	slices.SortFunc(expired, func(a, b tasks.Task) int {
		return cmp.Or(a.Lease.ExpiresAt.Compare(b.Lease.ExpiresAt), cmp.Compare(a.ID, b.ID))
	})
	next := map[string]tasks.Task{}
	ids := []string{}
	for _, t := range expired[:min(len(expired), limit)] {
		n, err := t.RecoverExpired(now)
		if err != nil {
			return nil, err
		}
		if deliver != nil {
			if err := deliver(ctx, t.ID); err != nil {
				return nil, fmt.Errorf("deliver task %s again: %w", t.ID, err)
			}
		}
		next[t.ID] = n
		ids = append(ids, t.ID)
	}
	maps.Copy(s.rows, next)
	return ids, nil
}

// apply runs one rule on the stored task and stores its result, atomically.
func (s *TaskStore) apply(id string, rule func(tasks.Task) (tasks.Task, error)) (tasks.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down("write task %q", id); err != nil {
		return tasks.Task{}, err
	}
	t, ok := s.rows[id]
	if !ok {
		return tasks.Task{}, fmt.Errorf("task %q: %w", id, ports.ErrNotFound)
	}
	next, err := rule(cloneTask(t))
	if err != nil {
		return tasks.Task{}, err
	}
	s.rows[id] = cloneTask(next)
	return cloneTask(next), nil
}

// holderError applies the ports.TaskStore precedence to err, the rule's
// answer for owner/token on t: a non-terminal task the caller no longer
// holds a live lease on is lease.ErrLost, whatever else the rule said.
func holderError(t tasks.Task, owner string, token int64, now time.Time, err error) error {
	if err == nil || errors.Is(err, tasks.ErrTerminal) || errors.Is(err, lease.ErrLost) {
		return err
	}
	if t.Lease.Check(owner, token, now) != nil {
		return fmt.Errorf("%w: %w", lease.ErrLost, err)
	}
	return err
}

// cloneTask copies the pointer fields so callers never alias stored state.
func cloneTask(t tasks.Task) tasks.Task {
	if t.Summary != nil {
		s := *t.Summary
		t.Summary = &s
	}
	if t.StartedAt != nil {
		at := *t.StartedAt
		t.StartedAt = &at
	}
	if t.FinishedAt != nil {
		at := *t.FinishedAt
		t.FinishedAt = &at
	}
	return t
}
