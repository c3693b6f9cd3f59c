package relay

import (
	"cmp"
	"fmt"
	"time"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
)

// Each tuning setting has one default and one range, here: Config uses
// them, the relay binary's environment parsing and the registered
// system-config keys (configsvc.TemplateSpecs) reuse them.
const (
	DefaultLoops = 2
	MinLoops     = 1
	MaxLoops     = 64

	DefaultBatchSize = 500
	MinBatchSize     = 1
	MaxBatchSize     = 1000

	DefaultLeaseFor = 30 * time.Second
	MinLeaseFor     = time.Second
	MaxLeaseFor     = lease.MaxTTL

	DefaultPollInterval = 500 * time.Millisecond
	MinPollInterval     = time.Millisecond
	MaxPollInterval     = time.Hour

	DefaultMaxAttempts = outbox.DefaultMaxAttempts
	MinMaxAttempts     = 1
	MaxMaxAttempts     = 100

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
	// StopTimeout bounds finishing the in-flight batches on Stop, all of
	// them together, counted from Stop (and each batch while running).
	// Default: DefaultStopTimeout.
	StopTimeout time.Duration
	// Policy decides retries after a failed publish.
	Policy outbox.Policy
	// OutageLogEvery rate-limits the queue-outage log: at most one
	// "task queue unavailable" WARN (and its "reachable again" pair) per
	// period. Default: DefaultOutageLogEvery.
	OutageLogEvery time.Duration
}

func (c Config) withDefaults() (Config, error) {
	c.Loops = cmp.Or(c.Loops, DefaultLoops)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.LeaseFor = cmp.Or(c.LeaseFor, DefaultLeaseFor)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.RecoverEvery = cmp.Or(c.RecoverEvery, DefaultRecoverEvery)
	c.StopTimeout = cmp.Or(c.StopTimeout, DefaultStopTimeout)
	c.OutageLogEvery = cmp.Or(c.OutageLogEvery, DefaultOutageLogEvery)
	switch {
	case c.Owner == "":
		return c, fmt.Errorf("relay: Config.Owner is empty; set a process-unique id such as relay-<host>-<pid>")
	case c.Loops < MinLoops || c.Loops > MaxLoops:
		return c, fmt.Errorf("relay: Config.Loops %d outside %d..%d", c.Loops, MinLoops, MaxLoops)
	case c.BatchSize < MinBatchSize || c.BatchSize > MaxBatchSize:
		return c, fmt.Errorf("relay: Config.BatchSize %d outside %d..%d", c.BatchSize, MinBatchSize, MaxBatchSize)
	case c.LeaseFor < MinLeaseFor || c.LeaseFor > MaxLeaseFor:
		return c, fmt.Errorf("relay: Config.LeaseFor %s outside %s..%s", c.LeaseFor, MinLeaseFor, MaxLeaseFor)
	case c.PollInterval < MinPollInterval || c.PollInterval > MaxPollInterval:
		return c, fmt.Errorf("relay: Config.PollInterval %s outside %s..%s", c.PollInterval, MinPollInterval, MaxPollInterval)
	case c.Policy.MaxAttempts != 0 && (c.Policy.MaxAttempts < MinMaxAttempts || c.Policy.MaxAttempts > MaxMaxAttempts):
		return c, fmt.Errorf("relay: Config.Policy.MaxAttempts %d outside %d..%d", c.Policy.MaxAttempts, MinMaxAttempts, MaxMaxAttempts)
	}
	return c, nil
}
