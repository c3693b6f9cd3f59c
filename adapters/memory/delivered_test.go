package memory_test

import (
	"testing"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
)

func TestOutboxDeliveredReader(t *testing.T) {
	t.Parallel()
	contracttests.RunOutboxDeliveredReader(t, func(*testing.T) contracttests.DeliveredStore { return memory.NewOutboxStore() })
}
