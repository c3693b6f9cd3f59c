package outbox_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/july/template/core/outbox"
)

func Example() {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

	// Inside the business transaction: build the event and insert it.
	ev, err := outbox.New(outbox.NewParams{
		EventID:        "0b7e6f2a-5c1d-4e8f-9a3b-2c4d6e8f0a1b", // from the caller's uuid generator
		EventType:      "topup.created",
		PayloadVersion: 1,
		AggregateType:  "topup_order",
		AggregateID:    "42",
		ResourceType:   "wallet",
		ResourceID:     "w-7",
		RequestID:      "req-1",
		Payload:        map[string]any{"order_id": "42", "amount": 1000},
		Now:            now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// In the relay: claim, try to enqueue, record the failure.
	ev, _ = outbox.Claim(ev, "relay-1", now, 30*time.Second)
	enqueueErr := outbox.Transient("QUEUE_UNAVAILABLE", "redis not reachable")
	d := outbox.Policy{}.OnFailure(ev.RetryCount, enqueueErr, now, 0)
	ev, _ = outbox.Fail(ev, "relay-1", ev.Lease.Token, d, now)
	fmt.Println(ev.Status, ev.RetryCount, ev.NextAttemptAt.Sub(now), ev.LastErrorCode)

	// The next attempt succeeds; the queue receives the envelope.
	ev, _ = outbox.Claim(ev, "relay-2", ev.NextAttemptAt, 30*time.Second)
	body, _ := json.Marshal(ev.Envelope())
	ev, _ = outbox.Complete(ev, "relay-2", ev.Lease.Token, ev.NextAttemptAt)
	fmt.Println(ev.Status, ev.Lease.Token)

	// The consumer decodes it.
	env, _ := outbox.DecodeEnvelope(body)
	var p struct {
		OrderID string `json:"order_id"`
	}
	_ = env.Decode(&p)
	fmt.Println(env.EventType, env.CorrelationID, p.OrderID)
	// Output:
	// pending 1 500ms QUEUE_UNAVAILABLE
	// delivered 2
	// topup.created req-1 42
}

func ExampleMarshalPayload() {
	_, err := outbox.MarshalPayload([]byte(`{"amount":1000}`))
	fmt.Println(errors.Is(err, outbox.ErrPayloadNotStructured))
	// Output: true
}

func ExampleBackoff_Delay() {
	b := outbox.DefaultBackoff
	for _, attempt := range []int{1, 2, 3, 11, 1000} {
		fmt.Println(attempt, b.Delay(attempt, 0), b.Delay(attempt, 0.999999999))
	}
	// Output:
	// 1 500ms 999.999999ms
	// 2 1s 1.999999999s
	// 3 2s 3.999999998s
	// 11 5m0s 9m59.9999997s
	// 1000 5m0s 9m59.9999997s
}

func ExampleNewConsumerFailureRecord() {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := outbox.Event{EventID: "0b7e6f2a-5c1d-4e8f-9a3b-2c4d6e8f0a1b", EventType: "order.created", Status: outbox.Delivered}

	// The consumer gave up (asynq retries exhausted or a permanent error):
	// the failure is recorded apart, the event stays delivered.
	f, err := outbox.NewConsumerFailureRecord(ev, "", "order 42 does not exist", now)
	fmt.Println(f.Code, f.Open(), ev.Status, err)

	// An event the relay has not marked delivered yet (a slow batch) has
	// a consumer failure all the same.
	ev.Status = outbox.Delivering
	f, err = outbox.NewConsumerFailureRecord(ev, "", "again", now)
	fmt.Println(f.Code, f.Open(), ev.Status, err)
	// Output:
	// CONSUMER_FAILED true delivered <nil>
	// CONSUMER_FAILED true delivering <nil>
}
