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
