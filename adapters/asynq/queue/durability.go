package queue

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
)

// Risk names one way the queue's Redis can forget tasks it acknowledged.
// The names are stable: they are the risk label of
// asynq_queue_redis_durability_risk and appear in the relay's log.
type Risk string

// The risks CheckDurability reports. Postgres holds every event; a task
// the queue loses is found and published again by the relay, so none of
// these loses data, but each one makes the queue drop work it promised.
const (
	// RiskEvictionPolicy: maxmemory is set and maxmemory-policy is not
	// noeviction, so at the limit Redis deletes keys, queued tasks among
	// them (volatile-* policies delete only keys with a TTL: Asynq's
	// retained tasks, which deduplicate a re-delivery). With maxmemory 0
	// there is no limit and nothing is evicted.
	RiskEvictionPolicy Risk = "eviction_policy"
	// RiskNoPersistence: neither AOF nor RDB snapshots. A restart comes
	// back empty.
	RiskNoPersistence Risk = "no_persistence"
	// RiskRDBOnly: no AOF, RDB snapshots only. A restart loses every
	// write since the last snapshot (minutes with the usual save points).
	RiskRDBOnly Risk = "rdb_only"
	// RiskAOFFsyncLax: AOF is on with appendfsync no, so the kernel
	// decides when writes reach the disk; a machine crash loses up to
	// about 30 s of them.
	RiskAOFFsyncLax Risk = "aof_fsync_lax"
	// RiskReplica: the node answering is a replica. Asynq's writes are
	// refused there (READONLY) or, with replica-read-only no, discarded at
	// the next resync with its master.
	RiskReplica Risk = "replica"
	// RiskMinReplicasOff: behind Sentinel or in a Cluster (automatic
	// failover), the master has replicas and min-replicas-to-write is 0.
	// Redis replicates asynchronously, so a promoted replica lacks the
	// writes its old master acknowledged last; min-replicas-to-write
	// bounds that window (it cannot close it).
	RiskMinReplicasOff Risk = "min_replicas_off"
)

// AllRisks lists every Risk in the order CheckDurability reports them.
var AllRisks = []Risk{RiskEvictionPolicy, RiskNoPersistence, RiskRDBOnly, RiskAOFFsyncLax, RiskReplica, RiskMinReplicasOff}

// Fix is what to set on the queue's Redis (or the relay) to remove r.
func (r Risk) Fix() string {
	switch r {
	case RiskEvictionPolicy:
		return "maxmemory-policy noeviction (and size maxmemory for the backlog)"
	case RiskNoPersistence, RiskRDBOnly:
		return "appendonly yes, appendfsync everysec"
	case RiskAOFFsyncLax:
		return "appendfsync everysec"
	case RiskReplica:
		return "point REDIS_URL at the master, or use redis-sentinel://"
	case RiskMinReplicasOff:
		return "min-replicas-to-write 1, min-replicas-max-lag 10"
	}
	return ""
}

// Sources of Durability.
const (
	// SourceConfig: the settings came from CONFIG GET.
	SourceConfig = "config"
	// SourceInfo: CONFIG is disabled or renamed (as on many managed
	// Redis services), so they came from INFO, which does not show
	// appendfsync, the save points or min-replicas-to-write.
	SourceInfo = "info"
)

// Durability is what CheckDurability could read of the queue Redis'
// durability settings, and the risks they carry.
type Durability struct {
	// Source is SourceConfig or SourceInfo.
	Source string
	// ConfigError is why CONFIG GET could not be used (Source is
	// SourceInfo), e.g. "ERR unknown command 'config' ...".
	ConfigError string
	// Topology is "single", "sentinel" or "cluster" (from the connection
	// options). Behind Sentinel the current master is read; in a Cluster
	// the master that owns the queue's hash slot.
	Topology string
	// Role is INFO replication's role of the node read: "master" or "slave".
	Role string
	// ConnectedReplicas is INFO replication's connected_slaves.
	ConnectedReplicas int
	// MaxMemory is maxmemory in bytes; 0 means no limit.
	MaxMemory int64
	// MaxMemoryPolicy is maxmemory-policy, e.g. "noeviction".
	MaxMemoryPolicy string
	// AppendOnly is true when AOF is on.
	AppendOnly bool
	// AppendFsync is appendfsync ("always", "everysec" or "no"); "" when
	// unknown (see Unknown).
	AppendFsync string
	// Save is the RDB save points (e.g. "3600 1 300 100"); "" means none,
	// or unknown when Unknown lists "save".
	Save string
	// RDBSaves is INFO persistence's rdb_saves: snapshots since the start.
	// Without CONFIG a snapshot since the start is the only sign of save
	// points: AOF off and none yet reads as RiskNoPersistence.
	RDBSaves int64
	// MinReplicasToWrite is min-replicas-to-write; -1 when unknown.
	MinReplicasToWrite int
	// Unknown lists the settings that could not be read.
	Unknown []string
	// Risks are the risks found, in AllRisks order; empty when none.
	Risks []Risk
}

// CheckDurability reads the durability settings of the Redis that holds
// queueName's tasks: CONFIG GET, or INFO where CONFIG is refused (renamed,
// disabled, or denied by an ACL), plus INFO for the role. With a Redis
// Cluster it reads the master that owns the queue's hash slot (asynq keeps
// a queue's keys under asynq:{<queue>}:), behind Sentinel the current
// master. It returns an error only when it could read nothing; it never
// outlives ctx (a Redis that hangs is abandoned). It opens and closes a
// connection; DurabilityChecker keeps one for repeated checks.
func CheckDurability(ctx context.Context, opt asynq.RedisConnOpt, queueName string) (Durability, error) {
	c, err := NewDurabilityChecker(opt, queueName)
	if err != nil {
		return Durability{}, err
	}
	defer c.Close()
	return c.Check(ctx)
}

// DurabilityChecker runs CheckDurability repeatedly over one client (a
// Sentinel client logs every master it discovers, so one client per check
// would log a pair of lines per check).
type DurabilityChecker struct {
	queue    string
	topology string
	client   redis.UniversalClient
}

// NewDurabilityChecker returns a checker of queueName's Redis, reached
// through opt. It connects lazily; Close releases the connection.
func NewDurabilityChecker(opt asynq.RedisConnOpt, queueName string) (*DurabilityChecker, error) {
	c := &DurabilityChecker{queue: queueName, topology: "single"}
	switch opt.(type) {
	case asynq.RedisFailoverClientOpt, *asynq.RedisFailoverClientOpt:
		c.topology = "sentinel"
	case asynq.RedisClusterClientOpt, *asynq.RedisClusterClientOpt:
		c.topology = "cluster"
	}
	client, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, fmt.Errorf("asynq queue: unsupported redis connection %T", opt)
	}
	c.client = client
	return c, nil
}

func newDurabilityChecker(lc fx.Lifecycle, opt asynq.RedisConnOpt, e *Publisher) (*DurabilityChecker, error) {
	c, err := NewDurabilityChecker(opt, e.Config().Queue)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(c.Close))
	return c, nil
}

// Close closes the checker's client; a check still running fails.
func (c *DurabilityChecker) Close() error { return c.client.Close() }

// Check is CheckDurability over the checker's client.
func (c *DurabilityChecker) Check(ctx context.Context) (Durability, error) {
	type result struct {
		d   Durability
		err error
	}
	done := make(chan result, 1)
	go func() { // go-redis bounds reads by its own timeouts, not ctx: a hung Redis is abandoned
		d, err := c.check(ctx)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-ctx.Done():
		return Durability{}, fmt.Errorf("asynq queue: read redis durability settings: %w", ctx.Err())
	}
}

func (c *DurabilityChecker) check(ctx context.Context) (Durability, error) {
	d := Durability{Topology: c.topology, MinReplicasToWrite: -1}
	var node redis.Cmdable = c.client
	if cc, ok := c.client.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, "asynq:{"+c.queue+"}:")
		if err != nil {
			return Durability{}, fmt.Errorf("asynq queue: find the cluster master of queue %s: %w", c.queue, err)
		}
		node = m
	}

	// A server error (a renamed command, an ACL) leaves the other source;
	// a connection error leaves nothing trustworthy.
	var rerr redis.Error
	info, ierr := node.Info(ctx).Result()
	if ierr != nil && !errors.As(ierr, &rerr) {
		return Durability{}, fmt.Errorf("asynq queue: read redis INFO: %w", ierr)
	}
	fields := parseInfo(info)
	conf, cerr := configGet(ctx, node, "maxmemory", "maxmemory-policy", "appendonly", "appendfsync", "save", "min-replicas-to-write")
	switch {
	case cerr != nil && !errors.As(cerr, &rerr):
		return Durability{}, fmt.Errorf("asynq queue: read redis CONFIG: %w", cerr)
	case cerr != nil && ierr != nil:
		return Durability{}, fmt.Errorf("asynq queue: redis refuses both CONFIG (%w) and INFO (%w)", cerr, ierr)
	case cerr != nil:
		d.Source, d.ConfigError = SourceInfo, cerr.Error()
	default:
		d.Source = SourceConfig
	}
	if v, ok := fields["role"]; ok {
		d.Role = v
	} else {
		d.Unknown = append(d.Unknown, "role")
	}
	d.ConnectedReplicas, _ = strconv.Atoi(fields["connected_slaves"])
	d.RDBSaves, _ = strconv.ParseInt(fields["rdb_saves"], 10, 64)
	pick := func(param, infoField string) (string, bool) {
		if v, ok := conf[param]; ok {
			return v, true
		}
		v, ok := fields[infoField]
		return v, ok
	}
	if v, ok := pick("maxmemory", "maxmemory"); ok {
		d.MaxMemory, _ = strconv.ParseInt(v, 10, 64)
	} else {
		d.Unknown = append(d.Unknown, "maxmemory")
	}
	if v, ok := pick("maxmemory-policy", "maxmemory_policy"); ok {
		d.MaxMemoryPolicy = v
	} else {
		d.Unknown = append(d.Unknown, "maxmemory-policy")
	}
	if v, ok := conf["appendonly"]; ok {
		d.AppendOnly = v == "yes"
	} else if v, ok := fields["aof_enabled"]; ok {
		d.AppendOnly = v == "1"
	} else {
		d.Unknown = append(d.Unknown, "appendonly")
	}
	saveKnown := false
	if v, ok := conf["appendfsync"]; ok {
		d.AppendFsync = v
	} else {
		d.Unknown = append(d.Unknown, "appendfsync")
	}
	if v, ok := conf["save"]; ok {
		d.Save, saveKnown = v, true
	} else {
		d.Unknown = append(d.Unknown, "save")
	}
	if v, ok := conf["min-replicas-to-write"]; ok {
		d.MinReplicasToWrite, _ = strconv.Atoi(v)
	} else {
		d.Unknown = append(d.Unknown, "min-replicas-to-write")
	}

	if d.MaxMemory > 0 && d.MaxMemoryPolicy != "" && d.MaxMemoryPolicy != "noeviction" {
		d.Risks = append(d.Risks, RiskEvictionPolicy)
	}
	if !d.AppendOnly && !slices.Contains(d.Unknown, "appendonly") {
		snapshots := d.Save != ""
		if !saveKnown {
			snapshots = d.RDBSaves > 0 || fields["rdb_bgsave_in_progress"] == "1"
		}
		if snapshots {
			d.Risks = append(d.Risks, RiskRDBOnly)
		} else {
			d.Risks = append(d.Risks, RiskNoPersistence)
		}
	}
	if d.AppendOnly && d.AppendFsync == "no" {
		d.Risks = append(d.Risks, RiskAOFFsyncLax)
	}
	if d.Role == "slave" {
		d.Risks = append(d.Risks, RiskReplica)
	}
	if d.Topology != "single" && d.Role == "master" && d.ConnectedReplicas > 0 && d.MinReplicasToWrite == 0 {
		d.Risks = append(d.Risks, RiskMinReplicasOff)
	}
	return d, nil
}

// configGet runs CONFIG GET once per parameter (Redis before 7 takes one
// at a time). A parameter the server does not list is left out.
func configGet(ctx context.Context, c redis.Cmdable, params ...string) (map[string]string, error) {
	out := make(map[string]string, len(params))
	for _, p := range params {
		m, err := c.ConfigGet(ctx, p).Result()
		if err != nil {
			return nil, err
		}
		if v, ok := m[p]; ok {
			out[p] = v
		}
	}
	return out, nil
}

// parseInfo reads INFO's "field:value" lines.
func parseInfo(s string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// DurabilityMetrics exports the outcome of the durability checks:
// asynq_queue_redis_durability_risk{risk} (1 while the last successful
// check found the risk, 0 otherwise; every risk is exported from the
// start), asynq_queue_redis_durability_check_up (1 when the last check
// could read the settings) and asynq_queue_redis_durability_checks_total.
type DurabilityMetrics struct {
	risk   *prometheus.GaugeVec
	up     prometheus.Gauge
	checks prometheus.Counter
}

// NewDurabilityMetrics registers the durability metrics on reg.
func NewDurabilityMetrics(reg prometheus.Registerer) (*DurabilityMetrics, error) {
	m := &DurabilityMetrics{
		risk: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "asynq_queue_redis_durability_risk",
			Help: "1 while the queue's Redis can lose acknowledged tasks this way (eviction_policy, no_persistence, rdb_only, aof_fsync_lax, replica, min_replicas_off), per the last successful check.",
		}, []string{"risk"}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "asynq_queue_redis_durability_check_up",
			Help: "1 when the last check of the queue Redis' durability settings could read them.",
		}),
		checks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "asynq_queue_redis_durability_checks_total",
			Help: "Checks of the queue Redis' durability settings, successful or not.",
		}),
	}
	for _, c := range []prometheus.Collector{m.risk, m.up, m.checks} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("asynq queue: register durability metrics: %w", err)
		}
	}
	for _, r := range AllRisks {
		m.risk.WithLabelValues(string(r))
	}
	return m, nil
}

// Observe records one check's outcome. A failed check sets check_up to 0
// and keeps the risks of the last successful one.
func (m *DurabilityMetrics) Observe(d Durability, err error) {
	m.checks.Inc()
	if err != nil {
		m.up.Set(0)
		return
	}
	m.up.Set(1)
	for _, r := range AllRisks {
		v := 0.0
		if slices.Contains(d.Risks, r) {
			v = 1
		}
		m.risk.WithLabelValues(string(r)).Set(v)
	}
}
