package idemhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
)

// Regression (issue 43 item 5): a Redis stall longer than the guard's
// 200 ms budget times the guard's SET out on the client while the server
// still runs it once the stall ends. The request goes on (Postgres
// decides) and commits; the guard it never knew it held must not turn the
// retries of that committed request into 409 for the guard's TTL. The
// stall is CLIENT PAUSE WRITE for 600 ms (server-wide, so kept short);
// the TTL is long so that only a release, not expiry, frees the guard.
func TestIdemRedisStallLeavesNoOrphanedGuard(t *testing.T) {
	t.Parallel()
	g, r := redisGuardOn(t)
	a := newApp(t, appOpts{guard: g, guardTTL: 10 * time.Minute, capture: true})
	name := idemhttp.GuardName(ports.IdempotencyKey{
		Scope:     idempotency.Scope{Principal: "user-1", Operation: "order.create"},
		RequestID: "order-req-0051",
	})
	ctx := t.Context()
	// A serving API's client pipelines (rueidis goes to its background
	// pipe once two commands overlap, or a command has no deadline); a
	// timed-out command then stays on the connection and runs later. An
	// idle client would instead close the connection and Redis drop the
	// command. A PING without a deadline takes the client there.
	pctx, cancel := context.WithCancel(ctx)
	require.NoError(t, r.Client.Do(pctx, r.Client.B().Ping().Build()).Error())
	cancel()

	require.NoError(t, r.Client.Do(ctx, r.Client.B().ClientPause().Timeout(600).Write().Build()).Error())
	first := a.post(t, createBody, "X-Request-ID", "order-req-0051")
	require.Equal(t, http.StatusCreated, first.Status, "rule: a Redis stall never fails the request (body %s)", first.Body)

	// The stall is over once a write goes through.
	probe := r.Prefix + "probe"
	require.Eventually(t, func() bool {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return r.Client.Do(c, r.Client.B().Set().Key(probe).Value("1").Build()).Error() == nil
	}, time.Minute, 20*time.Millisecond, "Redis kept refusing writes after CLIENT PAUSE")

	require.Eventually(t, func() bool {
		holder, err := g.Owner(ctx, name)
		return err == nil && holder == ""
	}, 30*time.Second, 20*time.Millisecond, "rule: a guard whose acquire timed out is released, owner-checked")

	again := a.post(t, createBody, "X-Request-ID", "order-req-0051")
	require.Equal(t, http.StatusCreated, again.Status, "rule: the retry of a committed request replays (body %s)", again.Body)
	require.Equal(t, "true", again.Header.Get(idemhttp.HeaderReplayed))
	require.Equal(t, first.Body, again.Body)
	require.EqualValues(t, 1, a.rows(t))
}

// lateGuard is a real (memory) guard whose first Acquire times out on the
// client while its SET lands later than the release the middleware sends
// after it: rueidis spreads commands over several pipelined connections,
// so under load the release can run first and find nothing to free.
type lateGuard struct {
	*memory.Guard
	once, released sync.Once
	firstRelease   chan struct{} // closed by the first Release call
	landed         chan struct{}
}

func (g *lateGuard) Release(ctx context.Context, key, owner string) (bool, error) {
	freed, err := g.Guard.Release(ctx, key, owner)
	g.released.Do(func() { close(g.firstRelease) })
	return freed, err
}

func (g *lateGuard) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	late := false
	g.once.Do(func() { late = true })
	if !late {
		return g.Guard.Acquire(ctx, key, owner, ttl)
	}
	go func() {
		<-g.firstRelease // the SET lands after the first release attempt, whatever the machine's load
		_, _ = g.Guard.Acquire(context.Background(), key, owner, ttl)
		close(g.landed)
	}()
	return false, fmt.Errorf("acquire guard %q: %w", key, ports.ErrUnavailable)
}

// Regression: a guard SET that lands after the first background release
// is still released; retries of the committed request replay.
func TestIdemLateGuardWriteIsReleasedToo(t *testing.T) {
	t.Parallel()
	g := &lateGuard{Guard: memory.NewGuard(time.Now), firstRelease: make(chan struct{}), landed: make(chan struct{})}
	a := newApp(t, appOpts{guard: g, guardTTL: 10 * time.Minute, capture: true})
	name := idemhttp.GuardName(ports.IdempotencyKey{
		Scope:     idempotency.Scope{Principal: "user-1", Operation: "order.create"},
		RequestID: "order-req-0052",
	})
	first := a.post(t, createBody, "X-Request-ID", "order-req-0052")
	require.Equal(t, http.StatusCreated, first.Status, "body %s", first.Body)
	<-g.landed
	require.Eventually(t, func() bool {
		holder, err := g.Owner(t.Context(), name)
		return err == nil && holder == ""
	}, 30*time.Second, 20*time.Millisecond, "rule: a guard whose SET landed late is released too")
	again := a.post(t, createBody, "X-Request-ID", "order-req-0052")
	require.Equal(t, http.StatusCreated, again.Status, "rule: the retry of a committed request replays (body %s)", again.Body)
}
