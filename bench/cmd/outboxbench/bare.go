package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The bare relay is the yardstick the issue measured the template against:
// what a hand-written relay doing the same job costs, with none of the
// template's rules (no envelope, no fencing on the mark, no retry
// decisions, no metrics). Each loop claims 100 due rows, enqueues them
// with 8 concurrent asynq enqueues, then marks the enqueued ones
// delivered; 4 loops run side by side.
const (
	bareBatch       = 100
	bareConcurrency = 8
)

const bareClaimSQL = `WITH due AS MATERIALIZED (
	SELECT id FROM tb_outbox_event
	WHERE status = 1 AND next_attempt_at <= now()
	ORDER BY next_attempt_at, id
	LIMIT $1
	FOR UPDATE SKIP LOCKED
)
UPDATE tb_outbox_event AS e
SET status = 2, lease_owner = 'bare', lease_token = e.lease_token + 1, lease_expires_at = now() + interval '30 seconds', updated_at = now()
FROM due WHERE e.id = due.id
RETURNING e.id, e.event_id::text, e.event_type, e.payload`

const bareMarkSQL = `UPDATE tb_outbox_event
SET status = 3, delivered_at = now(), updated_at = now(), lease_owner = NULL, lease_expires_at = NULL
WHERE id = ANY($1) AND status = 2`

// bareDrain runs the bare relay with loops loops until n events are
// marked delivered.
func bareDrain(ctx context.Context, pool *pgxpool.Pool, client *asynq.Client, queueName string, loops, n int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		marked   atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	fail := func(err error) { once.Do(func() { firstErr = err; cancel() }) }
	for range loops {
		wg.Go(func() {
			for ctx.Err() == nil && marked.Load() < int64(n) {
				k, err := bareOnce(ctx, pool, client, queueName)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						fail(err)
					}
					return
				}
				if marked.Add(int64(k)) >= int64(n) {
					cancel()
				}
				if k == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if got := marked.Load(); got < int64(n) {
		return fmt.Errorf("bare relay marked %d of %d: %w", got, n, ctx.Err())
	}
	return nil
}

// bareOnce is one claim, enqueue, mark cycle; it returns how many it marked.
func bareOnce(ctx context.Context, pool *pgxpool.Pool, client *asynq.Client, queueName string) (int, error) {
	type claimed struct {
		id      int64
		eventID string
		typ     string
		payload []byte
	}
	rows, err := pool.Query(ctx, bareClaimSQL, bareBatch)
	if err != nil {
		return 0, fmt.Errorf("bare claim: %w", err)
	}
	var batch []claimed
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.id, &c.eventID, &c.typ, &c.payload); err != nil {
			rows.Close()
			return 0, fmt.Errorf("bare claim scan: %w", err)
		}
		batch = append(batch, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("bare claim: %w", err)
	}
	if len(batch) == 0 {
		return 0, nil
	}
	ok := make([]bool, len(batch))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(bareConcurrency, len(batch)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(batch) {
					return
				}
				c := batch[i]
				_, err := client.EnqueueContext(ctx, asynq.NewTask(c.typ, c.payload), asynq.Queue(queueName), asynq.TaskID(c.eventID), asynq.MaxRetry(25))
				ok[i] = err == nil || errors.Is(err, asynq.ErrTaskIDConflict)
			}
		})
	}
	wg.Wait()
	ids := make([]int64, 0, len(batch))
	for i, c := range batch {
		if ok[i] {
			ids = append(ids, c.id)
		}
	}
	tag, err := pool.Exec(ctx, bareMarkSQL, ids)
	if err != nil {
		return 0, fmt.Errorf("bare mark: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
