package memory_test

import (
	"context"
	"testing"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/ports"
)

func TestTaskStoreContract(t *testing.T) {
	t.Parallel()

	caps := contracttests.TaskCaps{
		Outage: func(_ *testing.T, s ports.TaskStore) (ports.TaskStore, func()) {
			m := s.(*memory.TaskStore)
			m.SetDown(true)
			return m, func() { m.SetDown(false) }
		},
	}
	contracttests.RunTaskStore(t, caps, func(t *testing.T) ports.TaskStore {
		return memory.NewTaskStore()
	})
}

func TestTaskRecoveryContract(t *testing.T) {
	t.Parallel()
	contracttests.RunTaskRecovery(t, func(_ *testing.T, deliver func(context.Context, string) error) ports.TaskTable {
		return memory.NewTaskStore().TaskTable("contract", deliver)
	})
}
