package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/internal/pgtopo"
)

// putAttempt is one config write of the writer that runs across the failover.
type putAttempt struct {
	sent, done time.Time
	value      string
	requestID  string
	res        apitest.Response
	err        error
}

// POSTGRES FAILOVER, the API half (the relays': apps/relay
// TestE2EPostgresFailover). The API runs on the multi-host DATABASE_URL of
// an internal/pgtopo pair while a writer keeps changing a config key; the
// primary crashes and the standby is promoted. The API reconnects by
// itself: until it does, every write answers 503 DEPENDENCY_UNAVAILABLE
// with nothing internal in the body; afterwards writes succeed on the new
// primary, the rows written before the crash read back through the API
// and /readyz is ok again. The config route is the template's own, so the
// test outlives make remove-examples.
func TestAPIReconnectsAfterPostgresFailover(t *testing.T) {
	t.Parallel()
	pair := pgtopo.Start(t)
	bdb, err := testinfra.OpenBun(pair.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = bdb.Close() })
	require.NoError(t, migrateDomains(t.Context(), bdb))
	a := startAPI(t, appOpts{db: &testinfra.DB{Name: "postgres", URL: pair.URL, Bun: bdb}})
	tok := admin(t)
	put := func(key, body, requestID string) apitest.Request {
		return apitest.Request{Method: "PUT", Path: configsPath + key, Token: tok, Body: body,
			Header: map[string]string{"X-Request-ID": requestID}}
	}

	// Rows written before the crash, replayed by the standby.
	before := map[string]string{keyCount: "7", keyFlag: "true", keyMode: `"b"`, keyDoc: `{"b":2}`}
	for key, v := range before {
		res := a.do(t, put(key, `{"value":`+v+`}`, "before-"+key))
		require.Equal(t, http.StatusOK, res.Status, "%s: %s", key, res.Body)
	}
	pair.CaughtUp(t)

	// The writer: one write at a time, each a new value, until stopped.
	var (
		mu       sync.Mutex
		attempts []putAttempt
	)
	ctx, stop := context.WithCancel(context.Background())
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for n := 1; ctx.Err() == nil; n++ {
			at := putAttempt{value: fmt.Sprintf("fo-%d", n), requestID: fmt.Sprintf("failover-put-%05d", n), sent: time.Now()}
			// Not ctx: stopping must not cancel a write in flight, which the
			// server may still commit (the current value would then be a
			// write the test never saw answered).
			rctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			at.res, at.err = apitest.Send(rctx, a.url, put(keyText, `{"value":"`+at.value+`"}`, at.requestID))
			cancel()
			at.done = time.Now()
			mu.Lock()
			attempts = append(attempts, at)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop(); <-writerDone })
	// recovered returns the first success sent after since, if any.
	recovered := func(since time.Time) (putAttempt, bool, string) {
		mu.Lock()
		defer mu.Unlock()
		last := "no write sent yet"
		for _, at := range attempts {
			if at.sent.Before(since) {
				continue
			}
			if at.err == nil && at.res.Status == http.StatusOK {
				return at, true, ""
			}
			last = fmt.Sprintf("%s: err %v, %d %s", at.value, at.err, at.res.Status, at.res.Body)
		}
		return putAttempt{}, false, last
	}
	start := time.Now()
	require.Eventually(t, func() bool { _, ok, _ := recovered(start); return ok }, 10*time.Second, 10*time.Millisecond,
		"the writer succeeds before the crash")

	crash := time.Now()
	pair.Kill(t)
	killed := time.Now()
	pair.Promote(t)
	promoted := time.Now()

	var first putAttempt
	// Generous: a promotion takes about a second alone; the bound only
	// ends a run where writes never come back.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		at, ok, last := recovered(killed)
		if ok {
			first = at
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write succeeded within 2 min of the promotion; last attempt %s\nlogs:\n%s", last, a.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a few more writes on the new primary
	stop()
	<-writerDone

	// Every answer is in the contract; a failure is a clean, retryable 503.
	var failed, afterKill []putAttempt
	for _, at := range attempts {
		require.NoError(t, at.err, "%s: the API answered every request (it must not exit)", at.value)
		checkContract(t, at.res)
		if at.res.Status == http.StatusOK {
			if !at.sent.Before(killed) {
				afterKill = append(afterKill, at)
			}
			continue
		}
		failed = append(failed, at)
		require.Equal(t, http.StatusServiceUnavailable, at.res.Status, "%s: %s\n%s", at.value, at.res.Body, a.logs.String())
		require.Equal(t, "DEPENDENCY_UNAVAILABLE", at.res.Error.Code, at.res.Body)
		require.True(t, at.res.Error.Retryable, at.res.Body)
		require.NotEmpty(t, at.res.Header.Get("Retry-After"), at.value)
		require.Equal(t, at.requestID, at.res.Error.RequestID)
		requireNothingInternal(t, at.res.Body)
	}

	require.Equal(t, http.StatusOK, a.do(t, apitest.Request{Method: "GET", Path: "/healthz"}).Status)
	require.Eventually(t, func() bool {
		res, err := a.send(apitest.Request{Method: "GET", Path: "/readyz"})
		return err == nil && res.Status == http.StatusOK && strings.Contains(res.Body, `"ok"`)
	}, 15*time.Second, 100*time.Millisecond, "/readyz is ok again (its probe result is cached for a second)")

	for key, v := range before {
		view := decodeView(t, a.do(t, apitest.Request{Method: "GET", Path: configsPath + key, Token: tok}))
		require.JSONEq(t, v, string(view.Value), "%s written before the crash reads back from the new primary", key)
		require.EqualValues(t, 1, view.Version, key)
	}
	last := afterKill[len(afterKill)-1]
	view := decodeView(t, a.do(t, apitest.Request{Method: "GET", Path: configsPath + keyText, Token: tok}))
	require.JSONEq(t, `"`+last.value+`"`, string(view.Value), "the last acknowledged write is the current value")
	res := a.do(t, put(keyText, `{"value":"after-failover"}`, "after-failover-put"))
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	require.JSONEq(t, `"after-failover"`, string(decodeView(t, res).Value))

	// Every write acknowledged after the crash is on the new primary, with
	// its audit record (a fresh pool: the test's own still holds
	// connections to the dead primary).
	fresh, err := testinfra.OpenBun(pair.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fresh.Close() })
	a.db = &testinfra.DB{Name: "postgres", URL: pair.URL, Bun: fresh}
	audited := map[string]bool{}
	for _, p := range a.audits(t, keyText) {
		audited[p.RequestID] = true
	}
	for _, at := range afterKill {
		require.True(t, audited[at.requestID], "%s (acknowledged after the crash) is audited on the new primary", at.value)
	}

	if len(failed) > 0 {
		t.Logf("a failed write answered %d %s", failed[0].res.Status, failed[0].res.Body)
	}
	t.Logf("api postgres failover: kill took %s, promotion %s more; first write succeeded %s after the kill returned (%s after the promotion returned, %s after the kill began); %d of %d writes failed (all 503 DEPENDENCY_UNAVAILABLE), %d acknowledged after the kill",
		killed.Sub(crash).Round(time.Millisecond), promoted.Sub(killed).Round(time.Millisecond),
		first.done.Sub(killed).Round(time.Millisecond), first.done.Sub(promoted).Round(time.Millisecond),
		first.done.Sub(crash).Round(time.Millisecond), len(failed), len(attempts), len(afterKill))
}
