package idempotency_test

import (
	"fmt"
	"time"

	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/lease"
)

func ExampleFingerprinter_FromJSON() {
	// The route names its top-level transport fields; nothing else is skipped.
	f, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{Volatile: []string{"timestamp"}})
	if err != nil {
		panic(err)
	}
	first, _ := f.FromJSON([]byte(`{"amount": 1.0, "currency": "CNY", "timestamp": 1719830400}`))
	retry, _ := f.FromJSON([]byte(`{"currency":"CNY","amount":1,"Timestamp":1719830460}`))
	other, _ := f.FromJSON([]byte(`{"currency":"CNY","amount":2}`))

	fmt.Println(first.Equal(retry), first.Equal(other))
	fmt.Println(first.String()[:3])
	// Output:
	// true false
	// v3:
}

func ExampleDecide() {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	if err := idempotency.ValidateKey("01HZX3Q9K7M2N8P4R6T0V5W1YB"); err != nil {
		panic(err)
	}
	f, _ := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	fp, _ := f.FromJSON([]byte(`{"amount":100}`))
	other, _ := f.FromJSON([]byte(`{"amount":200}`))

	running := &idempotency.Record{
		Fingerprint: fp,
		State:       idempotency.StateInProgress,
		Lease:       lease.Lease{Owner: "api-1", Token: 1, ExpiresAt: now.Add(30 * time.Second)},
	}
	fmt.Println(idempotency.Decide(nil, fp, now))
	fmt.Println(idempotency.Decide(running, fp, now), idempotency.Decide(running, fp, now).Err())
	fmt.Println(idempotency.Decide(running, fp, now.Add(30*time.Second)))
	fmt.Println(idempotency.Decide(running, other, now))
	// Output:
	// new
	// in_progress request with this idempotency key is still in progress: retry later with the same key
	// takeover
	// reused
}

func ExampleResolveNoRow() {
	type status int16
	const pending, processing, completed status = 1, 2, 3
	allowed := func(from, to status) bool {
		return from == pending && to == processing || from == processing && to == completed
	}

	// "UPDATE ... SET status = 3 WHERE id = ? AND status = 2" touched no row;
	// the re-read shows the row already completed.
	current := completed
	outcome, err := idempotency.ResolveNoRow(&current, processing, completed, allowed)
	fmt.Println(outcome, err)
	// Output: already_done already in target status
}
