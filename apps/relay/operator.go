package main

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/dig"
	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/cli/outboxcmd"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
	"github.com/july/template/internal/envconf"
)

// openOperator opens what `relay outbox` runs on through the adapters'
// Modules: the outbox store and, when REDIS_URL is set, the queue whose
// retained tasks a replay deletes.
func openOperator(getenv func(string) string) outboxcmd.OpenFunc {
	return func(ctx context.Context) (outboxcmd.Deps, func(), error) {
		r := envconf.New(getenv)
		dbURL := r.PostgresURL("DATABASE_URL")
		redisURL := r.String("REDIS_URL", "") // optional here; replay uses it
		if redisURL != "" {
			redisURL = r.RedisURL("REDIS_URL")
		}
		queueName := r.String("ASYNQ_QUEUE", "default")
		if err := r.Err(); err != nil {
			return outboxcmd.Deps{}, nil, fmt.Errorf("%w: %w", outboxcmd.ErrConfig, err)
		}
		opts := []fx.Option{
			fx.NopLogger,
			fx.Supply(postgres.Config{URL: dbURL, MaxOpenConns: 2}),
			postgres.Module,
			fx.Provide(
				func() ports.Clock { return ports.SystemClock },
				func(s ports.OutboxStore) relay.OperatorStore { return s },
			),
		}
		if redisURL != "" {
			opts = append(opts, queue.Module, fx.Provide(relay.NewOperator),
				fx.Supply(queue.ModuleConfig{RedisURL: redisURL, Publisher: queue.Config{Queue: queueName}}))
		} else {
			opts = append(opts, fx.Provide(func(s relay.OperatorStore, clock ports.Clock) (*relay.Operator, error) {
				return relay.NewOperator(s, nil, nil, clock)
			}))
		}
		var deps outboxcmd.Deps
		app := fx.New(append(opts, fx.Populate(&deps.Store, &deps.Operator, &deps.Audit))...)
		if err := app.Err(); err != nil {
			// What failed, not the graph that needed it.
			err = dig.RootCause(err)
			if oe := (*postgres.OpenError)(nil); errors.As(err, &oe) {
				err = fmt.Errorf("%w; fix: %s", oe, oe.Fix())
			}
			return deps, nil, err
		}
		return deps, func() { _ = app.Stop(context.WithoutCancel(ctx)) }, nil
	}
}
