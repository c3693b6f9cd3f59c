package queue

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/july/template/core/redisurl"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/fx"

	"github.com/july/template/core/ports"
)

// ModuleConfig is what an app supplies (fx.Supply) for Module.
type ModuleConfig struct {
	// RedisURL is the asynq Redis (REDIS_URL): one node, Sentinel or
	// Cluster (see redisurl).
	RedisURL string
	// Publisher configures the producer side.
	Publisher Config
	// Server configures the worker. Nil Queues process the Publisher's
	// queue; a nil Logger takes the app's *slog.Logger, and a nil
	// DeadLetterFunc calls the app's DeadLetterRecorder, when provided.
	Server ServerConfig
}

// ConsumerGroup is the fx value group the worker collects Consumers from.
const ConsumerGroup = `group:"asynq.consumers"`

// Module provides asynq.RedisConnOpt, *asynq.Client and *asynq.Inspector
// (closed on stop), *Publisher also as ports.Publisher, ports.RetainedTasks
// ports.QueueInventory and ports.QueueHistory on the Publisher's queue,
// LossWatchers, a
// *DurabilityChecker (closed on stop), its readiness Probe, the *Wake by
// which the Publisher starts the worker at once, the queue's *Bell by
// which it starts workers in other processes, and
// *asynq.Server whose handlers are the Consumers in ConsumerGroup. The
// server starts only in apps that include RunWorker (or otherwise depend
// on *asynq.Server).
var Module = fx.Module("asynq",
	fx.Provide(
		newRedisConnOpt,
		newClient,
		newInspector,
		newWake,
		newBell,
		fx.Annotate(newPublisher, fx.As(fx.Self()), fx.As(new(ports.Publisher))),
		fx.Annotate(newRetained, fx.As(new(ports.RetainedTasks))),
		fx.Annotate(newInventory, fx.As(new(ports.QueueInventory))),
		fx.Annotate(newHistory, fx.As(new(ports.QueueHistory))),
		newLossWatchers,
		newDurabilityChecker,
		newProbe,
		newWorker,
	),
)

// MetricsModule exports the sizes of the app's queues (the Publisher's
// queue and the worker's Queues) as asynq_queue_tasks{queue,state} and
// asynq_queue_stats_up{queue}, read through Module's *asynq.Inspector at
// scrape time (NewQueueStats). It needs a prometheus.Registerer from the app.
var MetricsModule = fx.Module("asynq-metrics", fx.Invoke(registerQueueStats))

func registerQueueStats(reg prometheus.Registerer, ins *asynq.Inspector, e *Publisher, cfg ModuleConfig) error {
	queues := []string{e.Config().Queue}
	for q := range cfg.Server.Queues {
		queues = append(queues, q)
	}
	if err := reg.Register(NewQueueStats(ins, queues)); err != nil {
		return fmt.Errorf("asynq queue: register queue metrics: %w", err)
	}
	return nil
}

// DeadLetterRecorder is told about each task that failed for good (see
// DeadLetterFunc); relay.DeadLetter implements it. Apps provide one to
// have Module's worker call it.
type DeadLetterRecorder interface {
	Record(ctx context.Context, taskID, taskType string, err error)
}

// RecordDeadLetters is the DeadLetterFunc that hands each final failure,
// by task id and type, to rec.
func RecordDeadLetters(rec DeadLetterRecorder) DeadLetterFunc {
	return func(ctx context.Context, task *asynq.Task, err error) {
		id, _ := asynq.GetTaskID(ctx)
		rec.Record(ctx, id, task.Type(), err)
	}
}

// RunWorker makes the app start the worker server on start and shut it
// down gracefully on stop.
var RunWorker = fx.Invoke(func(*asynq.Server) {})

// AsConsumer annotates a constructor returning a Consumer so its result
// joins ConsumerGroup:
//
//	fx.Provide(queue.AsConsumer(newOrderCreatedConsumer))
func AsConsumer(f any) any { return fx.Annotate(f, fx.ResultTags(ConsumerGroup)) }

func newRedisConnOpt(cfg ModuleConfig) (asynq.RedisConnOpt, error) {
	topo, err := redisurl.Parse(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("asynq queue: %w", err)
	}
	return ConnOpt(topo), nil
}

func newClient(lc fx.Lifecycle, opt asynq.RedisConnOpt) *asynq.Client {
	c := asynq.NewClient(opt)
	lc.Append(fx.StopHook(c.Close))
	return c
}

func newInspector(lc fx.Lifecycle, opt asynq.RedisConnOpt) *asynq.Inspector {
	ins := asynq.NewInspector(opt)
	lc.Append(fx.StopHook(ins.Close))
	return ins
}

// newWake is the Wake the Publisher signals and the worker waits on, so
// the relay's deliveries start this process's worker at once.
func newWake() *Wake { return NewWake() }

// newBell is the bell of the Publisher's queue: the Publisher rings it,
// this process's worker listens to it (closed on stop).
func newBell(lc fx.Lifecycle, opt asynq.RedisConnOpt, cfg ModuleConfig) (*Bell, error) {
	b, err := NewBell(opt, cmp.Or(strings.TrimSpace(cfg.Publisher.Queue), DefaultQueue))
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(b.Close))
	return b, nil
}

func newPublisher(c *asynq.Client, cfg ModuleConfig, wake *Wake, bell *Bell) (*Publisher, error) {
	pc := cfg.Publisher
	if pc.Wake == nil {
		pc.Wake = wake
	}
	if pc.Bell == nil {
		pc.Bell = bell
	}
	return NewPublisher(c, pc)
}

func newRetained(ins *asynq.Inspector, e *Publisher) (*Retained, error) {
	return NewRetained(ins, e.Config().Queue)
}

func newInventory(lc fx.Lifecycle, opt asynq.RedisConnOpt, e *Publisher) (*Inventory, error) {
	inv, err := NewInventory(opt, e.Config().Queue)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(inv.Close))
	return inv, nil
}

func newHistory(lc fx.Lifecycle, opt asynq.RedisConnOpt, ins *asynq.Inspector, e *Publisher) (*History, error) {
	h, err := NewHistory(opt, ins, e.Config().Queue)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(h.Close))
	return h, nil
}

// LossWatchers makes LossWatchers of the Publisher's queue (Module
// provides it, so apps need not know asynq's connection options).
type LossWatchers struct {
	opt   asynq.RedisConnOpt
	queue string
}

// New returns a LossWatcher; see NewLossWatcher.
func (l LossWatchers) New(every time.Duration, log *slog.Logger, signal func(ports.LossSignal)) (*LossWatcher, error) {
	return NewLossWatcher(l.opt, l.queue, every, log, signal)
}

func newLossWatchers(opt asynq.RedisConnOpt, e *Publisher) LossWatchers {
	return LossWatchers{opt: opt, queue: e.Config().Queue}
}

// Probe is Module's readiness probe of the queue's Redis, named "redis";
// an app lists it among the ports.Probe its readiness endpoint checks.
type Probe struct{ ports.Probe }

func newProbe(c *asynq.Client) Probe {
	return Probe{ports.Probe{Name: "redis", Check: func(context.Context) error { return c.Ping() }}}
}

type workerParams struct {
	fx.In

	Lifecycle  fx.Lifecycle
	Opt        asynq.RedisConnOpt
	Config     ModuleConfig
	Publisher  *Publisher
	Wake       *Wake
	Bell       *Bell
	Logger     *slog.Logger       `optional:"true"`
	DeadLetter DeadLetterRecorder `optional:"true"`
	Consumers  []Consumer         `group:"asynq.consumers"`
	// Evidence, when provided, records every envelope task a consumer
	// finished (WithEvidence), for the relay's reconciler.
	Evidence ports.ConsumptionRecorder `optional:"true"`
	// Tracer, when provided and not a no-op (adapters/tracing), traces
	// every task.
	Tracer trace.TracerProvider `optional:"true"`
}

func newWorker(p workerParams) (*asynq.Server, error) {
	sc := p.Config.Server
	if sc.Logger == nil {
		sc.Logger = p.Logger
	}
	if sc.DeadLetterFunc == nil && p.DeadLetter != nil {
		sc.DeadLetterFunc = RecordDeadLetters(p.DeadLetter)
	}
	if len(sc.Queues) == 0 {
		sc.Queues = map[string]int{p.Publisher.Config().Queue: 1}
	}
	if sc.Wake == nil {
		sc.Wake = p.Wake
	}
	var opts []MuxOption
	var ev *Evidence
	if p.Evidence != nil {
		ev = NewEvidence(p.Evidence, 0, sc.Logger)
		opts = append(opts, WithEvidence(ev, nil))
	}
	mux, err := NewMux(sc.Logger, p.Consumers, opts...)
	if err != nil {
		return nil, err
	}
	if _, off := p.Tracer.(noop.TracerProvider); p.Tracer != nil && !off {
		mux.Use(TraceMiddleware(p.Tracer))
	}
	srv := NewServer(p.Opt, sc)
	listen, stopListen := context.WithCancel(context.Background())
	var listening sync.WaitGroup
	p.Lifecycle.Append(fx.Hook{
		// Start only spawns goroutines; it does not block on Redis.
		OnStart: func(context.Context) error {
			listening.Go(func() { p.Bell.Listen(listen, sc.Wake) })
			return srv.Start(mux)
		},
		OnStop: func(context.Context) error {
			stopListen()
			listening.Wait()
			sc.Wake.Close() // an idle worker stops waiting for work
			srv.Shutdown()
			if ev != nil {
				ev.Close() // after the last task: its record is written too
			}
			return nil
		},
	})
	return srv, nil
}
