// Package pgperiodic keeps periodic commands' cursors in
// tb_periodic_command (ports.PeriodicCommandStore) and appends their
// occurrences' events to tb_outbox_event in the same transaction.
package pgperiodic

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres/internal/pgerr"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// Store is ports.PeriodicCommandStore on tb_periodic_command.
type Store struct {
	db *bun.DB
}

var _ ports.PeriodicCommandStore = (*Store)(nil)

// NewStore returns a Store over db (the pool from postgres.Open, with
// synchronous commit: a committed occurrence must not be lost).
func NewStore(db *bun.DB) (*Store, error) {
	if db == nil {
		return nil, errors.New("pgperiodic: NewStore needs a db; pass the *bun.DB from postgres.Open")
	}
	return &Store{db: db}, nil
}

const (
	// createSQL starts the cursor at the database's clock, or the relay's
	// when that is behind: a relay whose clock is fast would otherwise
	// skip, for every relay, the occurrences up to its now.
	createSQL = `INSERT INTO tb_periodic_command (name, cursor_at, created_at, updated_at)
VALUES (?, least(?::timestamptz, now()), ?, ?) ON CONFLICT (name) DO NOTHING RETURNING name`
	// lockSQL skips a row another relay holds: that relay is doing the
	// pass, and this one would only wait to find nothing due.
	lockSQL     = `SELECT cursor_at FROM tb_periodic_command WHERE name = ? FOR UPDATE SKIP LOCKED`
	existingSQL = `SELECT event_id::text FROM tb_outbox_event WHERE event_id IN (?)`
	advanceSQL  = `UPDATE tb_periodic_command SET cursor_at = ?, updated_at = ?,
	last_event_id = coalesce(?::uuid, last_event_id), committed_at = CASE WHEN ?::uuid IS NULL THEN committed_at ELSE ?::timestamptz END
WHERE name = ?`
)

// Advance implements ports.PeriodicCommandStore. An event whose event_id
// is already in tb_outbox_event (the state row was deleted and the clock
// had gone back, or the events were appended by hand) is counted as
// Existing and not appended, so a duplicate id never aborts the pass;
// one already removed by retention cannot come back either, because the
// cursor never moves back past it.
func (s *Store) Advance(ctx context.Context, command string, now time.Time, decide ports.PeriodicDecideFunc) (ports.PeriodicAdvance, error) {
	var res ports.PeriodicAdvance
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res = ports.PeriodicAdvance{}
		var created string
		err := tx.QueryRowContext(ctx, createSQL, command, now, now, now).Scan(&created)
		switch {
		case err == nil:
			res.Created = true
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("create the command's state: %w", pgerr.Translate(err))
		}
		var cursor time.Time
		err = tx.QueryRowContext(ctx, lockSQL, command).Scan(&cursor)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			res.Busy = true
			return nil
		case err != nil:
			return fmt.Errorf("lock the command's state: %w", pgerr.Translate(err))
		}
		events, next, err := decide(cursor)
		if err != nil {
			return err
		}
		if next.Before(cursor) {
			return fmt.Errorf("the cursor may not move back from %s to %s",
				cursor.Format(time.RFC3339Nano), next.Format(time.RFC3339Nano))
		}
		events, res.Existing, err = dropExisting(ctx, tx, events)
		if err != nil {
			return err
		}
		if err := pgoutbox.Append(ctx, tx, events...); err != nil {
			return fmt.Errorf("append the occurrences' events: %w", err)
		}
		res.Appended = len(events)
		if len(events) == 0 && next.Equal(cursor) {
			return nil // nothing due: no new row version (the lock alone marks the tuple)
		}
		var last any
		if len(events) > 0 {
			last = events[len(events)-1].EventID
		}
		if _, err := tx.ExecContext(ctx, advanceSQL, next, now, last, last, now, command); err != nil {
			return fmt.Errorf("move the cursor: %w", pgerr.Translate(err))
		}
		return nil
	})
	if err != nil {
		// The begin and the commit fail outside the statements above;
		// Translate makes an unreachable server ports.ErrUnavailable there
		// too and passes decide's own errors through.
		return ports.PeriodicAdvance{}, fmt.Errorf("periodic command %s: %w", command, pgerr.Translate(err))
	}
	return res, nil
}

// dropExisting returns events without those whose event_id is stored.
func dropExisting(ctx context.Context, tx bun.Tx, events []outbox.Event) ([]outbox.Event, int, error) {
	if len(events) == 0 {
		return events, 0, nil
	}
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = ev.EventID
	}
	var stored []string
	if err := tx.NewRaw(existingSQL, bun.List(ids)).Scan(ctx, &stored); err != nil {
		return nil, 0, fmt.Errorf("look up existing events: %w", pgerr.Translate(err))
	}
	if len(stored) == 0 {
		return events, 0, nil
	}
	have := make(map[string]bool, len(stored))
	for _, id := range stored {
		have[id] = true
	}
	kept := events[:0:0]
	for _, ev := range events {
		if !have[ev.EventID] {
			kept = append(kept, ev)
		}
	}
	return kept, len(events) - len(kept), nil
}
