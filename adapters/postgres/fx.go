package postgres

import (
	"context"

	"github.com/uptrace/bun"
	"go.uber.org/fx"
)

// Module provides a *bun.DB opened from the Config the app supplies
// (fx.Supply(postgres.Config{...})) and closes it when the app stops.
var Module = fx.Module("postgres",
	fx.Provide(newFxDB),
)

func newFxDB(lc fx.Lifecycle, cfg Config) (*bun.DB, error) {
	db, err := Open(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{OnStop: func(context.Context) error { return db.Close() }})
	return db, nil
}
