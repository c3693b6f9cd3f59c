package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/uptrace/bun"

	"github.com/july/template/bench/internal/procstat"
	"github.com/july/template/core/outbox"
)

// Watermill as a relay: the other comparison. watermill-sql's
// Postgres publisher pre-fills the events into a topic table (untimed),
// then one watermill-sql subscriber (DefaultPostgreSQLSchema with
// -watermill-batch rows per SELECT, DefaultPostgreSQLOffsetsAdapter)
// hands them over one at a time; the handler enqueues one asynq task,
// shaped as bare.go's, and acks. The offsets adapter locks the consumer
// group's row, so one subscriber is all a topic can use at a time.
const (
	watermillPollInterval = 10 * time.Millisecond
	watermillGroup        = "outboxbench"
)

// watermillDrainOnce pre-fills evs into a topic of its own, then times the
// subscriber until every message is handled and acked. The offsets row is
// checked afterwards: acks are committed with each batch's transaction.
func watermillDrainOnce(ctx context.Context, e *env, db *bun.DB, q *scratchQueue, evs []outbox.Event, batch int) (m drainMeasure, err error) {
	n := len(evs)
	pool, err := e.openPgx(ctx, 2)
	if err != nil {
		return m, err
	}
	defer pool.Close()
	topic := "outboxbench_" + randomHex(4)
	schema := wsql.DefaultPostgreSQLSchema{SubscribeBatchSize: batch}
	offsets := wsql.DefaultPostgreSQLOffsetsAdapter{}
	defer func() {
		// The scratch database goes at the end anyway; drop the run's
		// tables so runs do not pile up.
		_, derr := pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+schema.MessagesTable(topic)+", "+offsets.MessagesOffsetsTable(topic))
		if derr != nil && err == nil {
			err = fmt.Errorf("drop watermill tables: %w", derr)
		}
	}()
	if err := watermillPrefill(ctx, pool, schema, topic, evs, 500); err != nil {
		return m, err
	}
	sub, err := wsql.NewSubscriber(wsql.BeginnerFromPgx(pool), wsql.SubscriberConfig{
		ConsumerGroup:  watermillGroup,
		PollInterval:   watermillPollInterval,
		ResendInterval: watermillPollInterval,
		RetryInterval:  watermillPollInterval,
		SchemaAdapter:  schema,
		OffsetsAdapter: offsets,
	}, watermill.NopLogger{})
	if err != nil {
		return m, fmt.Errorf("watermill subscriber: %w", err)
	}
	defer func() { _ = sub.Close() }()
	if err := sub.SubscribeInitialize(topic); err != nil { // the offsets table, untimed
		return m, fmt.Errorf("watermill subscriber schema: %w", err)
	}

	s0, u0 := procstat.SampleServers(ctx, db), sampleUsage()
	start := time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, err := sub.Subscribe(runCtx, topic)
	if err != nil {
		return m, fmt.Errorf("watermill subscribe: %w", err)
	}
	handled, nacked := 0, 0
	timeout := time.After(5 * time.Minute)
	for err == nil && handled < n {
		select {
		case msg, ok := <-msgs:
			if !ok {
				err = fmt.Errorf("watermill subscription closed after %d of %d", handled, n)
				continue
			}
			if herr := watermillHandle(runCtx, q, msg); herr != nil {
				nacked++
				msg.Nack()
				continue
			}
			msg.Ack()
			handled++
		case <-timeout:
			err = fmt.Errorf("only %d of %d Watermill messages handled after 5 minutes", handled, n)
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	elapsed := time.Since(start)
	proc, busy := sampleUsage().since(u0)
	pg, rds := procstat.SampleServers(ctx, db).Since(s0)
	if cerr := sub.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close watermill subscriber: %w", cerr)
	}
	if err != nil {
		return m, err
	}
	if nacked != 0 {
		return m, fmt.Errorf("%d Watermill messages were nacked (enqueue failed); a clean drain has none", nacked)
	}
	var acked, last int64
	row := pool.QueryRow(ctx, "SELECT (SELECT offset_acked FROM "+offsets.MessagesOffsetsTable(topic)+" WHERE consumer_group = $1), (SELECT max(\"offset\") FROM "+schema.MessagesTable(topic)+")", watermillGroup)
	if err := row.Scan(&acked, &last); err != nil {
		return m, fmt.Errorf("read watermill offsets: %w", err)
	}
	if acked != last {
		return m, fmt.Errorf("after the drain the consumer group acked offset %d of %d", acked, last)
	}
	perEvent := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	return drainMeasure{rate: float64(n) / elapsed.Seconds(), cpuUS: perEvent(proc), pgUS: perEvent(pg), redisUS: perEvent(rds), busy: busy}, nil
}

// watermillHandle is the handler: one asynq task per message.
func watermillHandle(ctx context.Context, q *scratchQueue, msg *message.Message) error {
	_, err := q.client.EnqueueContext(ctx, asynq.NewTask(msg.Metadata.Get("event_type"), msg.Payload), asynq.Queue(q.name), asynq.TaskID(msg.UUID), asynq.MaxRetry(25))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return err
	}
	return nil
}

// watermillPrefill publishes evs, chunk per INSERT, the event fields in
// the metadata and the payload as the message body, then refreshes the
// planner statistics as prefill does for the outbox.
func watermillPrefill(ctx context.Context, pool *pgxpool.Pool, schema wsql.DefaultPostgreSQLSchema, topic string, evs []outbox.Event, chunk int) error {
	pub, err := wsql.NewPublisher(wsql.BeginnerFromPgx(pool), wsql.PublisherConfig{SchemaAdapter: schema, AutoInitializeSchema: true}, watermill.NopLogger{})
	if err != nil {
		return fmt.Errorf("watermill publisher: %w", err)
	}
	defer func() { _ = pub.Close() }()
	msgs := make([]*message.Message, 0, chunk)
	for i := 0; i < len(evs); i += chunk {
		msgs = msgs[:0]
		for _, ev := range evs[i:min(i+chunk, len(evs))] {
			msg := message.NewMessage(ev.EventID, message.Payload(ev.Payload))
			msg.Metadata.Set("event_type", ev.EventType)
			msg.Metadata.Set("payload_version", strconv.Itoa(ev.PayloadVersion))
			msg.Metadata.Set("aggregate_type", ev.AggregateType)
			msg.Metadata.Set("aggregate_id", ev.AggregateID)
			msg.Metadata.Set("resource_type", ev.ResourceType)
			msg.Metadata.Set("resource_id", ev.ResourceID)
			msg.Metadata.Set("request_id", ev.RequestID)
			msgs = append(msgs, msg)
		}
		if err := pub.Publish(topic, msgs...); err != nil {
			return fmt.Errorf("watermill pre-fill: %w", err)
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+schema.MessagesTable(topic)); err != nil {
		return fmt.Errorf("vacuum watermill topic: %w", err)
	}
	return nil
}
