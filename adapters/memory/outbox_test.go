package memory_test

import (
	"testing"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/ports"
)

func TestOutboxStoreContract(t *testing.T) {
	t.Parallel()

	caps := contracttests.OutboxCaps{
		Outage: func(_ *testing.T, s ports.OutboxStore) (ports.OutboxStore, func()) {
			m := s.(*memory.OutboxStore)
			m.SetDown(true)
			return m, func() { m.SetDown(false) }
		},
	}
	contracttests.RunOutboxStore(t, caps, func(t *testing.T) ports.OutboxStore {
		return memory.NewOutboxStore()
	})
}
