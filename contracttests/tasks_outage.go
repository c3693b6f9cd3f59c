package contracttests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/tasks"
)

func runTaskOutage(t *testing.T, caps TaskCaps, newStore func(t *testing.T) ports.TaskStore) {
	t.Run("Outage/EveryMethodUnavailableAndNothingChanges", func(t *testing.T) {
		t.Parallel()
		requireOutageHook(t, caps.Outage == nil, "TaskCaps.Outage")
		b := newTaskBundle(t, newStore)
		held := b.progress(b.claimed("o1", 3, "worker-a"), 2, 1, taskT0)
		idle := b.create("o2", 1)

		down, restore := caps.Outage(t, b.store)
		at := taskT0.Add(time.Second)
		owner, token := held.Lease.Owner, held.Lease.Token
		requireUnavailable(t, map[string]outageCall{
			"Create": func(ctx context.Context) error { _, err := down.Create(ctx, "o3", 1, at); return err },
			"Get":    func(ctx context.Context) error { _, err := down.Get(ctx, "o1"); return err },
			"Claim": func(ctx context.Context) error {
				_, err := down.Claim(ctx, "o2", "worker-b", taskLease, at)
				return err
			},
			"Renew": func(ctx context.Context) error { return down.Renew(ctx, "o1", owner, token, taskLease, at) },
			"RecordProgress": func(ctx context.Context) error {
				_, err := down.RecordProgress(ctx, "o1", owner, token, 0, 0, at)
				return err
			},
			"SetTotal": func(ctx context.Context) error {
				_, err := down.SetTotal(ctx, "o1", owner, token, 3, at)
				return err
			},
			"Complete": func(ctx context.Context) error { _, err := down.Complete(ctx, "o1", owner, token, at); return err },
			"Fail": func(ctx context.Context) error {
				_, err := down.Fail(ctx, "o1", owner, token, tasks.SummaryFor(tasks.CodeInfraUnavailable), at)
				return err
			},
			"Cancel": func(ctx context.Context) error { _, err := down.Cancel(ctx, "o2", at, true); return err },
			"RecoverExpired": func(ctx context.Context) error {
				_, err := down.RecoverExpired(ctx, held.Lease.ExpiresAt, 10)
				return err
			},
		})

		restore()
		requireTask(t, held, b.get("o1"), "after the outage: "+OutageRule)
		requireTask(t, idle, b.get("o2"), "after the outage: "+OutageRule)
		_, err := b.store.Get(b.ctx, "o3")
		require.ErrorIs(t, err, ports.ErrNotFound, "a Create during the outage stored o3: %s", OutageRule)
	})
}
