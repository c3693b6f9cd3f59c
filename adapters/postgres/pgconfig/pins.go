package pgconfig

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// Pins is ports.ConfigPins on tb_system_config_pin.
type Pins struct{ db *bun.DB }

var _ ports.ConfigPins = (*Pins)(nil)

// NewPins returns Pins on db.
func NewPins(db *bun.DB) (*Pins, error) {
	if db == nil {
		return nil, errors.New("pgconfig: NewPins needs a db; pass the *bun.DB from postgres.Open")
	}
	return &Pins{db: db}, nil
}

// Announce replaces owner's rows with pins in one transaction.
func (p *Pins) Announce(ctx context.Context, owner string, pins []sysconfig.Pin, now time.Time) error {
	err := p.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM tb_system_config_pin WHERE holder = ?`, owner); err != nil {
			return err
		}
		for _, pin := range pins {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO tb_system_config_pin (config_key, holder, source, seen_at) VALUES (?, ?, ?, ?)
				 ON CONFLICT (config_key, holder) DO UPDATE SET source = EXCLUDED.source, seen_at = EXCLUDED.seen_at`,
				pin.Key, owner, pin.Source, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("announce config pins of %q: %w", owner, pgerr.Translate(err))
	}
	return nil
}

// Withdraw deletes owner's rows.
func (p *Pins) Withdraw(ctx context.Context, owner string) error {
	if _, err := p.db.ExecContext(ctx, `DELETE FROM tb_system_config_pin WHERE holder = ?`, owner); err != nil {
		return fmt.Errorf("withdraw config pins of %q: %w", owner, pgerr.Translate(err))
	}
	return nil
}

// Active returns the pins seen at or after since, by key.
func (p *Pins) Active(ctx context.Context, since time.Time) (map[string][]sysconfig.Pin, error) {
	var rows []struct {
		Key    string `bun:"config_key"`
		Owner  string `bun:"holder"` // sysconfig.Pin.Owner; the column keeps its name
		Source string `bun:"source"`
	}
	if err := p.db.NewRaw(`SELECT config_key, holder, source FROM tb_system_config_pin WHERE seen_at >= ? ORDER BY config_key, holder`, since).
		Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read config pins: %w", pgerr.Translate(err))
	}
	out := make(map[string][]sysconfig.Pin, len(rows))
	for _, r := range rows {
		out[r.Key] = append(out[r.Key], sysconfig.Pin{Key: r.Key, Source: r.Source, Owner: r.Owner})
	}
	return out, nil
}
