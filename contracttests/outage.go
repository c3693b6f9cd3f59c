package contracttests

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/ports"
)

// OutageRule is the failure semantics every storage and queue port shares:
// the sentence the outage cases check and report when they fail.
const OutageRule = "rule: when the backing service is unreachable every method returns promptly " +
	"an error wrapping ports.ErrUnavailable and changes nothing"

// Outage takes the backing service of live away and returns a value of the
// same port whose calls now fail, and a restore func that brings the service
// back. Every suite's fixture or caps carries one as its Outage field, and
// every suite requires it: the outage case fails without it.
//
// A networked adapter returns a second instance over a closed port
// (testinfra.UnreachableDB, testinfra.UnreachableRedis) and a restore that
// does nothing; an in-memory fake switches live itself off (SetDown(true))
// and returns it, with a restore that switches it back on. After restore the
// suite reads live to check that nothing the failed calls asked for happened.
type Outage[T any] func(t *testing.T, live T) (down T, restore func())

// OutageBound is how long one call may take against an unreachable
// service. Adapters bound their own calls (connect timeouts); the suite
// passes a context without a deadline.
const OutageBound = 10 * time.Second

// outageCall is one port method called with valid arguments.
type outageCall func(ctx context.Context) error

// requireUnavailable runs every call, in name order, and checks each fails
// promptly with ports.ErrUnavailable and is not mistaken for a miss, a
// conflict or a lost lease.
func requireUnavailable(t *testing.T, calls map[string]outageCall) {
	t.Helper()
	names := make([]string, 0, len(calls))
	for name := range calls {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		start := time.Now()
		err := calls[name](t.Context())
		elapsed := time.Since(start)
		require.ErrorIs(t, err, ports.ErrUnavailable, "%s: %s", name, OutageRule)
		for _, other := range []error{ports.ErrNotFound, ports.ErrConflict, lease.ErrLost} {
			require.NotErrorIs(t, err, other, "%s: %s (an outage is not %q)", name, OutageRule, other)
		}
		require.Less(t, elapsed, OutageBound, "%s: %s (took %s)", name, OutageRule, elapsed)
	}
}

// requireOutageHook fails the case when the adapter offers no outage hook:
// failure semantics are part of every port's contract, not an option.
func requireOutageHook(t *testing.T, missing bool, field string) {
	t.Helper()
	if missing {
		t.Fatalf("fixture: %s is required: every adapter must show what its port does when the backing service is unreachable "+
			"(Postgres: testinfra.UnreachableDB, Redis: testinfra.UnreachableRedis, in-memory: a SetDown switch)", field)
	}
}
