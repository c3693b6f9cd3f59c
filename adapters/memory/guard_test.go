package memory_test

import (
	"testing"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/ports"
)

func TestGuard(t *testing.T) {
	t.Parallel()

	contracttests.RunGuard(t, func(t *testing.T) contracttests.GuardFixture {
		clock := newConfigClock()
		g := memory.NewGuard(clock.Now)
		return contracttests.GuardFixture{
			Guard:   g,
			Advance: clock.Advance,
			Outage: func(_ *testing.T, live ports.Guard) (ports.Guard, func()) {
				g.SetDown(true)
				return live, func() { g.SetDown(false) }
			},
		}
	})
}
