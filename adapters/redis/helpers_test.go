package redis_test

import (
	"net"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

// downTimeout bounds calls on the unreachable client.
const downTimeout = 200 * time.Millisecond

// liveTimeout bounds calls to a live Redis in the contract suites: the
// production default (200 ms) is a latency budget, the suites check
// semantics, and a starved CI machine can take longer than 200 ms (a
// concurrent fill-vs-invalidate case failed so in CI).
const liveTimeout = 5 * time.Second

// unreachableClient returns a client on a closed port (127.0.0.1:1).
// ForceSingleClient makes rueidis hand back the client although the first
// dial fails; every later command then fails as in a Redis outage.
func unreachableClient(t *testing.T) rueidis.Client {
	t.Helper()
	c, _ := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{"127.0.0.1:1"},
		ForceSingleClient: true,
		DisableCache:      true,
		Dialer:            net.Dialer{Timeout: downTimeout},
	})
	require.NotNil(t, c, "rueidis must return a client for an unreachable address when ForceSingleClient is set")
	t.Cleanup(c.Close)
	return c
}
