package memory_test

import (
	"testing"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/ports"
)

func TestOutboxStoreContract(t *testing.T) {
	t.Parallel()

	contracttests.RunOutboxStore(t, contracttests.OutboxCaps{}, func(t *testing.T) ports.OutboxStore {
		return memory.NewOutboxStore()
	})
}
