package topup_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/examples/topup"
)

// setClock is a clock a test moves by hand.
type setClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *setClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *setClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (c *setClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// rateEnv is an env whose topup.create.per_minute is limit, on a clock 15 s
// into a minute.
func rateEnv(t testing.TB, limit int, counter ports.WindowCounter) (*env, *setClock) {
	t.Helper()
	clock := &setClock{now: time.Date(2030, 1, 1, 8, 0, 15, 0, time.UTC)}
	return rateEnvOn(t, limit, counter, clock), clock
}

// rateEnvOn is rateEnv on clock.
func rateEnvOn(t testing.TB, limit int, counter ports.WindowCounter, clock ports.Clock) *env {
	t.Helper()
	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(topup.MigrationsFS)}).Bun
	reg := sysconfig.NewRegistry()
	require.NoError(t, reg.Register(topup.ConfigSpecs()...))
	store, err := pgconfig.NewStore(db, pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{}))
	require.NoError(t, err)
	svc, err := configsvc.New(reg, store, nil, ports.SystemClock, configsvc.Options{})
	require.NoError(t, err)
	_, err = svc.Update(t.Context(), sysconfig.UpdateRequest{Key: topup.KeyCreatesPerMinute, Raw: json.RawMessage(strconv.Itoa(limit)), Actor: "admin-1"}, configsvc.Meta{})
	require.NoError(t, err)
	return newEnv(t, envOpts{config: svc, counter: counter, clock: clock})
}

// Regression: one agent created 5,477 top-ups in 10 s. Creates are
// bounded per agent and clock minute by topup.create.per_minute: past it,
// 429 TOPUP_CREATE_RATE_LIMITED (retryable, Retry-After until the minute
// ends), nothing stored; another agent is not affected; the next minute
// allows creates again.
func TestCreateRatePerAgent(t *testing.T) {
	t.Parallel()
	e, clock := rateEnv(t, 3, nil)
	body := `{"amount_cents":100,"channel":"wechat"}`
	for i := range 3 {
		r := e.create(t, "agent-1", fmt.Sprintf("topup-rate-%04d", i), body)
		require.Equal(t, http.StatusCreated, r.Status, "create %d: %s", i, r.Body)
	}
	r := e.create(t, "agent-1", "topup-rate-over", body)
	require.Equal(t, http.StatusTooManyRequests, r.Status, "body %s", r.Body)
	require.Equal(t, topup.CodeRateLimited, r.Error.Code)
	require.True(t, r.Error.Retryable)
	require.Regexp(t, `\p{Han}`, r.Error.Message)
	require.Contains(t, r.Error.Message, "3", "the message names the limit")
	require.Equal(t, "45", r.Header.Get("Retry-After"), "rule: until the clock minute ends")
	require.Equal(t, 3, e.count(t, "ex_topup_order", "agent_id = ?", "agent-1"), "rule: a refused create stores nothing")

	replay := e.create(t, "agent-1", "topup-rate-0000", body)
	require.Equal(t, http.StatusTooManyRequests, replay.Status, "rule: the rate is checked before any lookup, so a retry counts too: %s", replay.Body)

	other := e.create(t, "agent-2", "topup-rate-other", body)
	require.Equal(t, http.StatusCreated, other.Status, "rule: the rate is per agent: %s", other.Body)

	clock.advance(45 * time.Second)
	again := e.create(t, "agent-1", "topup-rate-0000", body)
	require.Equal(t, http.StatusCreated, again.Status, "the next minute: %s", again.Body)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"), "an accepted create still replays once the window allows it")
}

// With the counter's Redis down, every replica counts in process: the
// rate still holds (per replica), creates are not refused for the
// outage, and nothing waits on Postgres for it.
func TestCreateRateHoldsWithRedisDown(t *testing.T) {
	t.Parallel()
	c, _ := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{"127.0.0.1:1"}, ForceSingleClient: true, DisableCache: true,
		Dialer: net.Dialer{Timeout: 200 * time.Millisecond},
	})
	require.NotNil(t, c)
	t.Cleanup(c.Close)
	down, err := redis.NewWindowCounter(c, "")
	require.NoError(t, err)
	e, _ := rateEnv(t, 2, down)
	body := `{"amount_cents":100,"channel":"wechat"}`
	for i := range 2 {
		r := e.create(t, "agent-1", fmt.Sprintf("topup-down-%04d", i), body)
		require.Equal(t, http.StatusCreated, r.Status, "rule: Redis down does not refuse creates: %s", r.Body)
	}
	r := e.create(t, "agent-1", "topup-down-over", body)
	require.Equal(t, http.StatusTooManyRequests, r.Status, "rule: the in-process count holds the rate: %s", r.Body)
	require.Equal(t, topup.CodeRateLimited, r.Error.Code)
	require.NotEmpty(t, r.Header.Get("Retry-After"))
}
