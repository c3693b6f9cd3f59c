package memory_test

import (
	"testing"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func TestPublisherContract(t *testing.T) {
	t.Parallel()

	contracttests.RunPublisher(t, func(t *testing.T) contracttests.PublisherFixture {
		p := memory.NewPublisher()
		return contracttests.PublisherFixture{
			Publisher: p,
			Tasks:     func(*testing.T) []outbox.Envelope { return p.Tasks() },
			Outage: func(_ *testing.T, live ports.Publisher) (ports.Publisher, func()) {
				p.SetDown(true)
				return live, func() { p.SetDown(false) }
			},
		}
	})
}

func TestRetainedTasksContract(t *testing.T) {
	t.Parallel()

	contracttests.RunRetainedTasks(t, func(t *testing.T) contracttests.RetainedTasksFixture {
		p := memory.NewPublisher()
		return contracttests.RetainedTasksFixture{
			Tasks:     p,
			Publisher: p,
			Held: func(*testing.T) []string {
				var ids []string
				for _, env := range p.Tasks() {
					ids = append(ids, env.EventID)
				}
				return ids
			},
			Outage: func(_ *testing.T, live ports.RetainedTasks) (ports.RetainedTasks, func()) {
				p.SetDown(true)
				return live, func() { p.SetDown(false) }
			},
		}
	})
}

func TestQueueInventoryContract(t *testing.T) {
	t.Parallel()
	contracttests.RunQueueInventory(t, func(t *testing.T) contracttests.QueueInventoryFixture {
		p := memory.NewPublisher()
		return contracttests.QueueInventoryFixture{
			Inventory: p,
			Publisher: p,
			Archive:   func(_ *testing.T, id string) { p.Archive(id) },
			LoseAll:   func(*testing.T) { p.Lose() },
			Outage: func(_ *testing.T, live ports.QueueInventory) (ports.QueueInventory, func()) {
				p.SetDown(true)
				return live, func() { p.SetDown(false) }
			},
		}
	})
}
