package memory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func TestPeriodicCommands(t *testing.T) {
	t.Parallel()

	contracttests.RunPeriodicCommandStore(t, func(t *testing.T) contracttests.PeriodicCommandStoreFixture {
		out := memory.NewOutboxStore()
		s := memory.NewPeriodicCommands(out)
		return contracttests.PeriodicCommandStoreFixture{
			Store: s,
			Stored: func(t *testing.T) []string {
				evs, err := out.List(t.Context(), ports.OutboxFilter{Limit: 500})
				require.NoError(t, err)
				ids := make([]string, 0, len(evs))
				for _, ev := range evs {
					ids = append(ids, ev.EventID)
				}
				return ids
			},
			Append: func(t *testing.T, ev outbox.Event) { require.NoError(t, out.Append(t.Context(), ev)) },
			Hold:   func(_ *testing.T, command string) func() { return s.Hold(command) },
			Outage: func(_ *testing.T, live ports.PeriodicCommandStore) (ports.PeriodicCommandStore, func()) {
				s.SetDown(true)
				return live, func() { s.SetDown(false) }
			},
		}
	})
}
