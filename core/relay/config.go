package relay

import (
	"cmp"
	"fmt"
	"time"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
)

// Defaults for Config fields left zero.
const (
	DefaultLoops        = 1
	DefaultBatchSize    = 500
	DefaultLeaseFor     = 30 * time.Second
	DefaultPollInterval = 500 * time.Millisecond
	DefaultRecoverEvery = 5 * time.Second
	DefaultStopTimeout  = 10 * time.Second
)

// Config tunes a Relay. The zero value (plus Owner) is valid.
type Config struct {
	// Owner identifies this process in lease_owner, e.g. "relay-<host>-<pid>".
	// Loop i uses Owner+"/<i>". Required.
	Owner string
	// Loops is how many claim loops run concurrently. Default: DefaultLoops.
	Loops int
	// BatchSize is how many rows one claim leases. Default: DefaultBatchSize.
	BatchSize int
	// LeaseFor is the lease length; it must comfortably exceed the time to
	// publish a batch. Default: DefaultLeaseFor.
	LeaseFor time.Duration
	// PollInterval is how long an idle loop sleeps when no notification
	// arrives. Default: DefaultPollInterval.
	PollInterval time.Duration
	// RecoverEvery is the period of the expired-lease sweep. Default:
	// DefaultRecoverEvery.
	RecoverEvery time.Duration
	// StopTimeout bounds finishing an in-flight batch on Stop. Default:
	// DefaultStopTimeout.
	StopTimeout time.Duration
	// Policy decides retries after a failed publish.
	Policy outbox.Policy
}

func (c Config) withDefaults() (Config, error) {
	c.Loops = cmp.Or(c.Loops, DefaultLoops)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.LeaseFor = cmp.Or(c.LeaseFor, DefaultLeaseFor)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.RecoverEvery = cmp.Or(c.RecoverEvery, DefaultRecoverEvery)
	c.StopTimeout = cmp.Or(c.StopTimeout, DefaultStopTimeout)
	switch {
	case c.Owner == "":
		return c, fmt.Errorf("relay: Config.Owner is empty; set a process-unique id such as relay-<host>-<pid>")
	case c.Loops < 1 || c.Loops > 64:
		return c, fmt.Errorf("relay: Config.Loops %d outside 1..64", c.Loops)
	case c.BatchSize < 1 || c.BatchSize > 1000:
		return c, fmt.Errorf("relay: Config.BatchSize %d outside 1..1000", c.BatchSize)
	case c.LeaseFor <= 0 || c.LeaseFor > lease.MaxTTL:
		return c, fmt.Errorf("relay: Config.LeaseFor %s outside (0, %s]", c.LeaseFor, lease.MaxTTL)
	case c.PollInterval < time.Millisecond:
		return c, fmt.Errorf("relay: Config.PollInterval %s below 1ms", c.PollInterval)
	}
	return c, nil
}
