package contracttests

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
// conflict or a lost lease. It checks every method before it fails the
// test, so the report names each method that broke the rule, not only the
// first. A call still running after OutageBound is reported as hanging and
// abandoned (its context is cancelled), so a hanging adapter cannot hang
// the suite.
func requireUnavailable(t *testing.T, calls map[string]outageCall) {
	t.Helper()
	names := make([]string, 0, len(calls))
	for name := range calls {
		names = append(names, name)
	}
	slices.Sort(names)
	var broken []string
	for _, name := range names {
		if why := outageVerdict(t.Context(), calls[name]); why != "" {
			broken = append(broken, name)
			t.Errorf("%s under outage: %s: %s", name, why, OutageRule)
		}
	}
	if len(broken) > 0 {
		t.Fatalf("%d of %d methods broke the outage rule: %s", len(broken), len(names), strings.Join(broken, ", "))
	}
}

// outageVerdict runs one call against a down service and says what is
// wrong with its answer, or "" when it is a prompt ErrUnavailable.
func outageVerdict(parent context.Context, call outageCall) string {
	ctx, cancel := context.WithCancel(parent)
	defer cancel() // frees a hanging call once it has been reported
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- call(ctx) }()
	timer := time.NewTimer(OutageBound)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-timer.C:
		return fmt.Sprintf("did not return within %s (it hangs)", OutageBound)
	}
	switch elapsed := time.Since(start); {
	case err == nil:
		return "returned no error"
	case !errors.Is(err, ports.ErrUnavailable):
		return fmt.Sprintf("returned %q, which does not wrap ports.ErrUnavailable", err)
	case elapsed >= OutageBound:
		return fmt.Sprintf("took %s", elapsed)
	}
	for _, other := range []error{ports.ErrNotFound, ports.ErrConflict, lease.ErrLost} {
		if errors.Is(err, other) {
			return fmt.Sprintf("returned %q, which also wraps %q (an outage is not a %s)", err, other, other)
		}
	}
	return ""
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
