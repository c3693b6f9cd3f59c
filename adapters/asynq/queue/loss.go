package queue

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
)

// DefaultLossCheckEvery is how often a LossWatcher looks at the queue's
// Redis: a loss it sees is reconciled within about this long.
const DefaultLossCheckEvery = time.Second

// canaryTTL is the least a canary outlives its watcher's last look: far
// longer than any pause between looks, so only a loss removes it early.
const canaryTTL = 10 * time.Minute

// LossWatcher watches the Redis node that holds a queue for signs that it
// forgot acknowledged writes: its run_id changed (a restart, or another
// node answers: a failover), its replication id changed (a replica was
// promoted), its evicted_keys counter moved, or the watcher's canary key,
// stored next to the queue's keys, vanished (a flush, a restart without
// persistence, an eviction, a failover to a replica that never had it).
// Each watcher has a canary of its own: with a shared one, a watcher whose
// first look came after a flush put it back and the others never saw the
// flush. The canary expires canaryTTL after the last look (GETEX, Redis
// 6.2+), so a stopped relay's does not stay.
type LossWatcher struct {
	client redis.UniversalClient
	canary string
	every  time.Duration
	log    *slog.Logger
	signal func(ports.LossSignal)

	seen bool
	last nodeState
	ttl  time.Duration

	svc startstop.Service
}

type nodeState struct {
	runID, replID string
	evicted       int64
}

// NewLossWatcher returns a watcher of queue's Redis (a client of opt,
// closed when Run returns) that calls signal for each sign of loss.
func NewLossWatcher(opt asynq.RedisConnOpt, queue string, every time.Duration, log *slog.Logger, signal func(ports.LossSignal)) (*LossWatcher, error) {
	c, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok || queue == "" || signal == nil {
		return nil, errors.New("asynq queue: NewLossWatcher needs a go-redis connection option, a queue name and a signal func")
	}
	if every <= 0 {
		every = DefaultLossCheckEvery
	}
	if log == nil {
		log = slog.Default()
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &LossWatcher{client: c, canary: "asynq:{" + queue + "}:july:canary:" + hex.EncodeToString(b), every: every, log: log,
		signal: signal, ttl: max(canaryTTL, 100*every)}, nil
}

// Start runs Run in the background and returns at once; Stop ends it.
// Both follow startstop's contract. The watcher's client closes when Run
// returns, so a stopped watcher is not started again.
func (w *LossWatcher) Start(context.Context) error {
	w.svc.Start(w.Run)
	return nil
}

// Stop ends Run and waits for it or for ctx.
func (w *LossWatcher) Stop(ctx context.Context) error {
	if err := w.svc.Stop(ctx); err != nil {
		return fmt.Errorf("queue loss watcher: %w", err)
	}
	return nil
}

// Run checks every period until ctx ends. An unreachable Redis is not a
// signal by itself; what changed while it was away is seen when it answers.
func (w *LossWatcher) Run(ctx context.Context) {
	defer w.client.Close()
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		w.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check looks once and reports what changed since the last look.
func (w *LossWatcher) Check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(w.every, time.Second))
	defer cancel()
	node, err := w.node(ctx)
	if err != nil {
		return
	}
	info, err := node.Info(ctx, "server", "replication", "stats").Result()
	if err != nil {
		return
	}
	cur := parseNode(info)
	val, err := node.GetEx(ctx, w.canary, w.ttl).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return
	}
	canaryGone := errors.Is(err, redis.Nil) || val == ""
	if w.seen {
		var sigs []ports.LossSignal
		switch {
		case cur.runID != w.last.runID:
			sigs = append(sigs, ports.LossSignal{Kind: "restart", Detail: "the queue's redis run_id changed (a restart, or a failover to another node)"})
		case cur.replID != w.last.replID:
			sigs = append(sigs, ports.LossSignal{Kind: "failover", Detail: "the queue's redis replication id changed (a replica was promoted)"})
		}
		if cur.runID == w.last.runID && cur.evicted > w.last.evicted {
			sigs = append(sigs, ports.LossSignal{Kind: "eviction", Detail: strconv.FormatInt(cur.evicted-w.last.evicted, 10) + " keys evicted by maxmemory-policy"})
		}
		if canaryGone {
			sigs = append(sigs, ports.LossSignal{Kind: "canary_missing", Detail: "the relay's canary key next to the queue vanished (a flush, a restart without persistence, an eviction)"})
		}
		for _, s := range sigs {
			w.signal(s)
		}
	}
	if canaryGone {
		if err := node.Set(ctx, w.canary, "1", w.ttl).Err(); err != nil {
			return // not seen: the next look compares with the old state again
		}
	}
	w.last, w.seen = cur, true
}

// node is the client of the node holding the queue's keys: the cluster
// master of their slot, else the (Sentinel-followed) master.
func (w *LossWatcher) node(ctx context.Context) (redis.Cmdable, error) {
	if cc, ok := w.client.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, w.canary)
	}
	return w.client, nil
}

func parseNode(info string) nodeState {
	var s nodeState
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		switch k {
		case "run_id":
			s.runID = v
		case "master_replid":
			s.replID = v
		case "evicted_keys":
			s.evicted, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return s
}
