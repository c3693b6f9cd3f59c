package idemhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
)

const createBody = `{"amount_cents":100}`

func TestIdemReplaysSameRequest(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{guard: redisGuard(t), capture: true})

	first := a.post(t, createBody, "X-Request-ID", "order-req-0001")
	require.Equal(t, http.StatusCreated, first.Status, "body %s", first.Body)
	require.Empty(t, first.Header.Get(idemhttp.HeaderReplayed), "rule: an original response is not marked replayed")

	again := a.post(t, `{ "timestamp": 1767225600, "amount_cents" : 100 }`, "X-Request-ID", "order-req-0001")
	require.Equal(t, http.StatusCreated, again.Status, "rule: a replay has the original status; body %s", again.Body)
	require.Equal(t, first.Body, again.Body, "rule: a replay has the original body, byte for byte")
	require.Equal(t, first.Header.Get(echo.HeaderContentType), again.Header.Get(echo.HeaderContentType), "rule: a replay has the original Content-Type")
	require.Equal(t, "true", again.Header.Get(idemhttp.HeaderReplayed))
	require.EqualValues(t, 1, a.rows(t))
}

// TestIdemNestedTransportNamesAreBusinessFields: a route without a declared
// command fingerprints its body (v3); a field called "time" or "sign" inside
// the payload is business data, so changing it under the same key is a
// reused key (422), not a replay of the first answer. v1 skipped it at any
// depth and replayed.
func TestIdemNestedTransportNamesAreBusinessFields(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{guard: redisGuard(t), capture: true})

	require.Equal(t, http.StatusCreated, a.post(t, `{"amount_cents":100,"pay":{"time":"2026-12-01T10:00:00Z","sign":"a1","timestamp":1}}`, "X-Request-ID", "order-req-nested").Status)
	for _, changed := range []string{
		`{"amount_cents":100,"pay":{"time":"2026-12-02T10:00:00Z","sign":"a1","timestamp":1}}`,
		`{"amount_cents":100,"pay":{"time":"2026-12-01T10:00:00Z","sign":"b2","timestamp":1}}`,
		// "timestamp" is the route's top-level transport field, not pay's.
		`{"amount_cents":100,"pay":{"time":"2026-12-01T10:00:00Z","sign":"a1","timestamp":2}}`,
	} {
		res := a.post(t, changed, "X-Request-ID", "order-req-nested")
		require.Equal(t, http.StatusUnprocessableEntity, res.Status, "rule: a changed nested business field is a new request; body %s", res.Body)
		require.Contains(t, res.Body, "IDEMPOTENCY_KEY_REUSED")
	}
	require.EqualValues(t, 1, a.rows(t))
}

func TestIdemReusedKeyChangesNothing(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{guard: redisGuard(t), capture: true})

	require.Equal(t, http.StatusCreated, a.post(t, createBody, "X-Request-ID", "order-req-0002").Status)
	r := a.post(t, `{"amount_cents":999}`, "X-Request-ID", "order-req-0002")
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, "body %s", r.Body)
	require.Equal(t, idemhttp.CodeKeyReused, r.Error.Code)
	require.False(t, r.Error.Retryable, "rule: a reused key is not retryable")
	require.Contains(t, r.Body, "同一幂等键已用于不同的请求内容")
	require.EqualValues(t, 1, a.rows(t), "rule: a reused key writes nothing")

	other := a.postAs(t, "user-2", createBody, "X-Request-ID", "order-req-0002")
	require.Equal(t, http.StatusCreated, other.Status, "rule: another principal's same key is another command")
	require.Empty(t, other.Header.Get(idemhttp.HeaderReplayed))
}

// Key checks come before any lookup: a missing or malformed key never
// reaches the guard, the handler or the database.
func TestIdemKeyValidatedBeforeAnyLookup(t *testing.T) {
	t.Parallel()
	g := &countingGuard{Guard: redisGuard(t)}
	a := newApp(t, appOpts{guard: g, capture: true})

	tests := []struct {
		name    string
		headers []string
		code    string
	}{
		{"missing", nil, idemhttp.CodeKeyMissing},
		{"blank idempotency key", []string{"Idempotency-Key", "  "}, idemhttp.CodeKeyMissing},
		// Not hex: the generated request id in the body is a UUID, which
		// contains "abc" in about 1 run in 140.
		{"too short request id", []string{"X-Request-ID", "xyz"}, idemhttp.CodeKeyInvalid},
		{"bad alphabet request id", []string{"X-Request-ID", "order req 0003"}, idemhttp.CodeKeyInvalid},
		{"bad idempotency key", []string{"Idempotency-Key", "order/req/0003"}, idemhttp.CodeKeyInvalid},
	}
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				r := a.post(t, createBody, tt.headers...)
				require.Equal(t, http.StatusBadRequest, r.Status, "headers %q: body %s", tt.headers, r.Body)
				require.Equal(t, tt.code, r.Error.Code, "headers %q", tt.headers)
				require.NotEmpty(t, r.Header.Get("X-Request-ID"), "rule: the response still carries a (generated) request id")
				if tt.code == idemhttp.CodeKeyInvalid {
					require.Contains(t, r.Body, "A-Z a-z 0-9 . _ : -", "rule: the message publishes the key format")
					require.NotContains(t, r.Body, tt.headers[1], "rule: the untrusted key is not echoed")
				}
			})
		}
	})
	require.Zero(t, g.acquires.Load(), "rule: no guard lookup for a bad key")
	require.Zero(t, a.handled.Load(), "rule: no handler (and no database) for a bad key")
	require.Zero(t, a.rows(t))
}

func TestIdemIdempotencyKeyAlias(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{guard: redisGuard(t), capture: true})

	first := a.post(t, createBody, "Idempotency-Key", "order-req-0004")
	require.Equal(t, http.StatusCreated, first.Status, "body %s", first.Body)

	quoted := a.post(t, createBody, "Idempotency-Key", `"order-req-0004"`)
	require.Equal(t, "true", quoted.Header.Get(idemhttp.HeaderReplayed), "rule: the draft's quoted form names the same key")

	viaRequestID := a.post(t, createBody, "X-Request-ID", "order-req-0004")
	require.Equal(t, "true", viaRequestID.Header.Get(idemhttp.HeaderReplayed), "rule: the alias and X-Request-ID share one key space")

	wins := a.post(t, createBody, "Idempotency-Key", "order-req-0005", "X-Request-ID", "order-req-0004")
	require.Equal(t, http.StatusCreated, wins.Status)
	require.Empty(t, wins.Header.Get(idemhttp.HeaderReplayed), "rule: Idempotency-Key wins over X-Request-ID")
	require.EqualValues(t, 2, a.rows(t))
}

// Behind a proxy that generates X-Request-ID for a request without one, a
// client that retries without a key sends a new "key" each time: with
// X-Request-ID as a key the create runs twice. IDEMPOTENCY_KEY_ONLY makes
// such a retry a 400 instead, and Idempotency-Key still replays.
func TestIdemBehindAProxyThatGeneratesRequestIDs(t *testing.T) {
	t.Parallel()

	t.Run("RequestIDAsKeyRunsARetryTwice", func(t *testing.T) {
		t.Parallel()
		a := newApp(t, appOpts{capture: true, proxy: true})
		for range 2 {
			require.Equal(t, http.StatusCreated, a.post(t, createBody).Status)
		}
		require.EqualValues(t, 2, a.rows(t), "the hazard IDEMPOTENCY_KEY_ONLY exists for: each retry got a fresh generated key")
	})

	t.Run("KeyOnlyRefusesAKeylessCreate", func(t *testing.T) {
		t.Parallel()
		a := newApp(t, appOpts{capture: true, proxy: true, keyOnly: true})
		for range 2 {
			r := a.post(t, createBody)
			require.Equal(t, http.StatusBadRequest, r.Status, "body %s", r.Body)
			require.Equal(t, idemhttp.CodeKeyMissing, r.Error.Code)
			require.Contains(t, r.Error.Message, "Idempotency-Key")
		}
		r := a.post(t, createBody, "X-Request-ID", "order-req-0100")
		require.Equal(t, idemhttp.CodeKeyMissing, r.Error.Code, "a client's own X-Request-ID is not a key either: the server cannot tell it from a generated one")
		require.Zero(t, a.rows(t))
		require.Zero(t, a.handled.Load())

		first := a.post(t, createBody, "Idempotency-Key", "order-req-0101")
		require.Equal(t, http.StatusCreated, first.Status, "body %s", first.Body)
		again := a.post(t, createBody, "Idempotency-Key", "order-req-0101")
		require.Equal(t, "true", again.Header.Get(idemhttp.HeaderReplayed), "Idempotency-Key replays behind the proxy")
		require.EqualValues(t, 1, a.rows(t))
	})
}

func TestIdemInvalidJSONBodyIsBadRequest(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{capture: true})

	r := a.post(t, `{"amount_cents":`, "X-Request-ID", "order-req-0006")
	require.Equal(t, http.StatusBadRequest, r.Status, "body %s", r.Body)
	require.Equal(t, "REQUEST_INVALID", r.Error.Code)
	require.Zero(t, a.handled.Load())
}

func TestIdemWithoutCaptureFailsClosed(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{capture: false})

	r := a.post(t, createBody, "X-Request-ID", "order-req-0007")
	require.Equal(t, http.StatusInternalServerError, r.Status, "rule: a server generated id must never become a key")
	require.Zero(t, a.handled.Load())
}

// The guard's duty: while a first request runs, a duplicate is turned away
// with a retryable 409 before it reaches the handler.
func TestIdemGuardHeldAnswersInProgress(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{guard: redisGuard(t), capture: true, gated: true})

	done := make(chan apitest.Response, 1)
	go func() { done <- a.post(t, createBody, "X-Request-ID", "order-req-0008") }()
	<-a.entered

	dup := a.post(t, createBody, "X-Request-ID", "order-req-0008")
	require.Equal(t, http.StatusConflict, dup.Status, "body %s", dup.Body)
	require.Equal(t, idemhttp.CodeInProgress, dup.Error.Code)
	require.True(t, dup.Error.Retryable, "rule: in progress is retryable")
	require.Equal(t, "1", dup.Header.Get("Retry-After"))

	close(a.gate)
	require.Equal(t, http.StatusCreated, (<-done).Status)
	require.EqualValues(t, 1, a.handled.Load(), "rule: the duplicate never reached the handler")

	after := a.post(t, createBody, "X-Request-ID", "order-req-0008")
	require.Equal(t, "true", after.Header.Get(idemhttp.HeaderReplayed), "rule: the guard is released after the handler")
}

// Regression: the same key with another body while the first request
// still runs is 422 IDEMPOTENCY_KEY_REUSED (a reused key never waits), not
// 409 IDEMPOTENCY_IN_PROGRESS, and the answer does not depend on Redis: the
// guard compares fingerprints before answering, and without it Postgres
// holds the second INSERT until the first commits, then compares.
func TestIdemReusedKeyWhileFirstRunsIsReused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		guard func(t *testing.T) ports.Guard
	}{{"redis guard", redisGuard}, {"redis down", downGuard}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := newApp(t, appOpts{guard: tt.guard(t), capture: true, gated: true, gateAfterInsert: true})

			first := make(chan apitest.Response, 1)
			go func() { first <- a.post(t, createBody, "X-Request-ID", "order-req-0031") }()
			<-a.entered // the first request's row is inserted, its transaction open

			reused := make(chan apitest.Response, 1)
			go func() { reused <- a.post(t, `{"amount_cents":1}`, "X-Request-ID", "order-req-0031") }()
			var r apitest.Response
			select {
			case r = <-reused: // answered while the first still runs
				close(a.gate)
			case <-a.lockWaiter(t): // Postgres holds it behind the first request
				close(a.gate)
				r = <-reused
			}
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, "rule: a reused key never waits (body %s)", r.Body)
			require.Equal(t, idemhttp.CodeKeyReused, r.Error.Code)
			require.False(t, r.Error.Retryable, "rule: a reused key is not retryable")

			require.Equal(t, http.StatusCreated, (<-first).Status)
			require.EqualValues(t, 1, a.rows(t), "rule: a reused key changes nothing")
			again := a.post(t, `{"amount_cents":1}`, "X-Request-ID", "order-req-0031")
			require.Equal(t, http.StatusUnprocessableEntity, again.Status, "body %s", again.Body)
		})
	}
}

// Regression: a record stored before a fingerprint version change (an
// upgrade from v1, or a route that starts declaring its command) replays a
// byte-identical retry: the request is recomputed with the record's
// version. Another body is still 422.
func TestIdemRetryAcrossFingerprintVersionChangeReplays(t *testing.T) {
	t.Parallel()
	v1, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{Version: idempotency.FingerprintV1})
	require.NoError(t, err)
	command := func(body []byte) (any, error) {
		var req orderRequest
		err := json.Unmarshal(body, &req)
		return req, err
	}
	old := newApp(t, appOpts{guard: redisGuard(t), capture: true, fingerprinter: v1})
	first := old.post(t, createBody, "X-Request-ID", "order-req-0041")
	require.Equal(t, http.StatusCreated, first.Status, "body %s", first.Body)
	v3 := newApp(t, appOpts{db: old.db, guard: redisGuard(t), capture: true})
	viaV3 := v3.post(t, `{"amount_cents":100,"note":"a"}`, "X-Request-ID", "order-req-0042")
	require.Equal(t, http.StatusCreated, viaV3.Status, "body %s", viaV3.Body)

	for _, tt := range []struct {
		name string
		o    appOpts
		key  string
		body string
		want apitest.Response
	}{
		{"v1 record, v3 route", appOpts{fingerprinter: nil}, "order-req-0041", createBody, first},
		{"v1 record, route declares its command (v2)", appOpts{command: command}, "order-req-0041", createBody, first},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.db, o.guard, o.capture = old.db, redisGuard(t), true
			upgraded := newApp(t, o)
			r := upgraded.post(t, tt.body, "X-Request-ID", tt.key)
			require.Equal(t, http.StatusCreated, r.Status, "rule: a byte-identical retry replays after a version change (body %s)", r.Body)
			require.Equal(t, "true", r.Header.Get(idemhttp.HeaderReplayed))
			require.Equal(t, tt.want.Body, r.Body, "rule: the replay is the original body")
			other := upgraded.post(t, `{"amount_cents":7}`, "X-Request-ID", tt.key)
			require.Equal(t, http.StatusUnprocessableEntity, other.Status, "rule: another body is still reused (body %s)", other.Body)
			require.EqualValues(t, 2, upgraded.handled.Load(), "both requests reached the handler")
		})
	}

	// A v3 record (before the route declared its command) replays under v2.
	upgraded := newApp(t, appOpts{db: old.db, guard: redisGuard(t), capture: true, command: command})
	r := upgraded.post(t, `{"amount_cents":100,"note":"a"}`, "X-Request-ID", "order-req-0042")
	require.Equal(t, http.StatusCreated, r.Status, "rule: a byte-identical retry replays after the route declared its command (body %s)", r.Body)
	require.Equal(t, viaV3.Body, r.Body)
	require.EqualValues(t, 2, old.rows(t), "rule: replays create nothing")
}

// With Redis down the guard is skipped and Postgres alone decides.
func TestIdemRedisDownPostgresDecides(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{guard: downGuard(t), capture: true})

	require.Equal(t, http.StatusCreated, a.post(t, createBody, "X-Request-ID", "order-req-0009").Status)
	again := a.post(t, createBody, "X-Request-ID", "order-req-0009")
	require.Equal(t, http.StatusCreated, again.Status, "body %s", again.Body)
	require.Equal(t, "true", again.Header.Get(idemhttp.HeaderReplayed))
	require.Equal(t, http.StatusUnprocessableEntity, a.post(t, `{"amount_cents":1}`, "X-Request-ID", "order-req-0009").Status)
	require.EqualValues(t, 1, a.rows(t))
}

// Fifty identical first requests at once create one row, with or without a
// working guard; every answer is the original, a replay, or a retryable 409.
func TestIdemConcurrentIdenticalRequestsCreateOneRow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		redis bool
	}{{"redis guard", true}, {"redis down", false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := appOpts{capture: true}
			if tt.redis {
				o.guard = redisGuard(t)
			} else {
				o.guard = downGuard(t)
			}
			a := newApp(t, o)

			const n = 50
			res := make([]apitest.Response, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					res[i] = a.post(t, createBody, "X-Request-ID", "order-req-0010")
				})
			}
			close(start)
			wg.Wait()

			statuses := map[string]int{}
			var original string
			var replays []string
			for _, r := range res {
				switch {
				case r.Status == http.StatusCreated && r.Header.Get(idemhttp.HeaderReplayed) == "":
					statuses["original"]++
					original = r.Body
				case r.Status == http.StatusCreated:
					statuses["replay"]++
					replays = append(replays, r.Body)
				case r.Status == http.StatusConflict && r.Error.Code == idemhttp.CodeInProgress && r.Error.Retryable:
					statuses["in_progress"]++
				default:
					require.Fail(t, "unexpected response", "status %d body %s", r.Status, r.Body)
				}
			}
			t.Logf("statuses %v", statuses)
			require.Equal(t, 1, statuses["original"], "statuses %v", statuses)
			for _, b := range replays {
				require.Equal(t, original, b, "rule: every replay is the original body, byte for byte")
			}
			require.EqualValues(t, 1, a.rows(t), fmt.Sprintf("rule: %d identical requests create one row (%v)", n, statuses))
		})
	}
}

func TestIdemMapError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err    error
		status int
		code   string
		retry  bool
	}{
		{fmt.Errorf("tx: %w", idempotency.ErrKeyReused), http.StatusUnprocessableEntity, idemhttp.CodeKeyReused, false},
		{fmt.Errorf("tx: %w", idempotency.ErrInProgress), http.StatusConflict, idemhttp.CodeInProgress, true},
		{idempotency.ErrKeyMissing, http.StatusBadRequest, idemhttp.CodeKeyMissing, false},
		{idempotency.ValidateKey("x"), http.StatusBadRequest, idemhttp.CodeKeyInvalid, false},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			t.Parallel()
			e, ok := idemhttp.MapError(tt.err)
			require.True(t, ok, "err %v", tt.err)
			require.Equal(t, tt.status, e.Status, "err %v", tt.err)
			require.Equal(t, tt.code, e.Code, "err %v", tt.err)
			require.Equal(t, tt.retry, e.Retryable, "err %v", tt.err)
			require.ErrorIs(t, e, tt.err, "rule: the cause is kept for the log")
		})
	}
	_, ok := idemhttp.MapError(context.Canceled)
	require.False(t, ok, "rule: other errors are not mapped")
}
