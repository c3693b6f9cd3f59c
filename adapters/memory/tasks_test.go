package memory_test

import (
	"testing"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/ports"
)

func TestTaskStoreContract(t *testing.T) {
	t.Parallel()

	contracttests.RunTaskStore(t, func(t *testing.T) ports.TaskStore {
		return memory.NewTaskStore()
	})
}
