package memory_test

import (
	"testing"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
)

func TestGuard(t *testing.T) {
	t.Parallel()

	contracttests.RunGuard(t, func(t *testing.T) contracttests.GuardFixture {
		clock := newConfigClock()
		return contracttests.GuardFixture{Guard: memory.NewGuard(clock.Now), Advance: clock.Advance}
	})
}
