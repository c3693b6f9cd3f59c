package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/apps/internal/testdomain"
)

// Item 4: request bodies in flight share a budget; one that does not fit
// answers 503 SERVER_BUSY with Retry-After instead of growing memory, and
// the budget frees when the holder finishes.
func TestBodyBudget(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{tune: func(c *config) { c.BodyBudget, c.BodyMinRate = 1536<<10, -1 }})
	agent := writer(t, "budget-agent")
	body := tdOrder(1000, 900<<10)

	// A slow upload holds its declared 900 KB for as long as it lasts.
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(t.Context(), "POST", a.url+testdomain.RouteOrders, pr)
	require.NoError(t, err)
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+agent)
	req.Header.Set("Idempotency-Key", "budget-slow-1")
	done := make(chan int, 1)
	go func() {
		res, err := testClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	_, err = pw.Write([]byte(body[:100]))
	require.NoError(t, err)
	a.waitBudget(t, int64(len(body)))

	busy := a.do(t, apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: agent, Body: body, Header: map[string]string{"Idempotency-Key": "budget-fast-1"}})
	require.Equal(t, http.StatusServiceUnavailable, busy.Status, busy.Body)
	require.Equal(t, "SERVER_BUSY", busy.Error.Code)
	require.True(t, busy.Error.Retryable)
	require.Equal(t, "1", busy.Header.Get("Retry-After"))
	small := a.do(t, apitest.Request{Method: "GET", Path: testdomain.RouteOrders + "/" + missingOrder, Token: agent})
	require.Equal(t, http.StatusNotFound, small.Status, "requests without a body are not limited: %s", small.Body)

	_, err = pw.Write([]byte(body[100:]))
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	require.Equal(t, http.StatusCreated, <-done)
	a.waitBudget(t, 0)
	ok := a.do(t, apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: agent, Body: body, Header: map[string]string{"Idempotency-Key": "budget-fast-1"}})
	require.Equal(t, http.StatusCreated, ok.Status, "the budget frees when the holder ends: %s", fmt.Sprint(ok.Body[:min(len(ok.Body), 200)]))
}

// One principal holding many slow bodies gets 429
// BODY_SHARE_EXCEEDED past its share, and another principal's request
// still fits in the budget.
func TestBodyBudgetSharesPerPrincipal(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{tune: func(c *config) {
		c.BodyBudget, c.BodyShare, c.BodyMinRate = 3<<20, 1<<20, -1 // no rate: the bodies stay
	}})
	attacker := writer(t, "share-attacker")
	const size = 700_000
	var conns []*slowBody
	for i := range 5 {
		conns = append(conns, a.startSlowBody(t, attacker, fmt.Sprintf("share-slow-%d", i), size))
	}
	// One body fits the attacker's share; the four others are refused.
	var refused int
	answers := slowAnswers(conns)
	for range 4 {
		r := <-answers
		require.Equal(t, http.StatusTooManyRequests, r.status, r.body)
		require.Equal(t, "BODY_SHARE_EXCEEDED", r.code, r.body)
		require.Equal(t, "1", r.retryAfter)
		requireChinese(t, r.body)
		refused++
	}
	require.Equal(t, 4, refused)
	a.waitBudget(t, size)

	other := writer(t, "share-other")
	ok := a.do(t, apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: other, Body: tdOrder(1000, size), Header: map[string]string{"Idempotency-Key": "share-other-1"}})
	require.Equal(t, http.StatusCreated, ok.Status, ok.Body[:min(len(ok.Body), 300)])

	for _, c := range conns {
		c.conn.Close()
	}
	a.waitBudget(t, 0)
}

// A body that stalls, or trickles a byte at a time, is
// cut off with 408 BODY_TOO_SLOW below the minimum rate, and its
// reservation is released for everyone else.
func TestBodyBudgetCutsSlowBodies(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{tune: func(c *config) {
		// A grace of 50 ms cut the last, fast 900 KB body too under -race on
		// a loaded machine (its first bytes came late); the slow ones are
		// cut after it all the same.
		c.BodyBudget, c.BodyMinRate, c.BodyRateGrace = 1<<20, 64<<10, 500*time.Millisecond
	}})
	attacker := writer(t, "slow-attacker")
	const size = 900_000

	stalled := a.startSlowBody(t, attacker, "slow-stalled-1", size)
	r := <-stalled.answer // waits for the server's cut, however long the machine takes
	require.Equal(t, http.StatusRequestTimeout, r.status, r.body)
	require.Equal(t, "BODY_TOO_SLOW", r.code, r.body)
	requireChinese(t, r.body)
	a.waitBudget(t, 0)

	trickle := a.startSlowBody(t, attacker, "slow-trickle-1", size)
	go func() { // a byte at a time, until the server stops listening
		for {
			select {
			case <-trickle.answered:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if _, err := trickle.conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	r = <-trickle.answer
	require.Equal(t, http.StatusRequestTimeout, r.status, r.body)
	require.Equal(t, "BODY_TOO_SLOW", r.code, r.body)
	a.waitBudget(t, 0)

	other := writer(t, "slow-other")
	ok := a.do(t, apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: other, Body: tdOrder(1000, size), Header: map[string]string{"Idempotency-Key": "slow-other-1"}})
	require.Equal(t, http.StatusCreated, ok.Status, ok.Body[:min(len(ok.Body), 300)])
}

// slowBody is a raw connection that sent its headers and the start of a
// body of the declared size, then nothing more unless the test writes.
type slowBody struct {
	conn     net.Conn
	answer   chan slowAnswer
	answered chan struct{}
}

type slowAnswer struct {
	status           int
	code, retryAfter string
	body             string
}

func (a *apiApp) startSlowBody(t *testing.T, tok, key string, size int) *slowBody {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprintf(conn, "POST "+testdomain.RouteOrders+" HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\n\r\n%s",
		tok, key, size, tdOrder(1000, size)[:20])
	require.NoError(t, err)
	s := &slowBody{conn: conn, answer: make(chan slowAnswer, 1), answered: make(chan struct{})}
	go func() {
		defer close(s.answered)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			s.answer <- slowAnswer{body: "no answer: " + err.Error()}
			return
		}
		b, _ := io.ReadAll(res.Body)
		var env struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal(b, &env)
		s.answer <- slowAnswer{status: res.StatusCode, code: env.Error.Code, retryAfter: res.Header.Get("Retry-After"), body: string(b)}
	}()
	return s
}

// slowAnswers merges the answers of conns.
func slowAnswers(conns []*slowBody) <-chan slowAnswer {
	out := make(chan slowAnswer, len(conns))
	for _, c := range conns {
		go func() {
			if r, ok := <-c.answer; ok {
				out <- r
			}
		}()
	}
	return out
}

// waitBudget waits until the bytes reserved by in-flight bodies are want,
// polling the gauge: bounded by progress, not by a deadline.
func (a *apiApp) waitBudget(t *testing.T, want int64) {
	t.Helper()
	for {
		got := a.plainGauge(t, "http_body_budget_in_use_bytes")
		if int64(got) == want {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("body budget in use: %v, want %d", got, want)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// plainGauge returns the value of an unlabelled gauge, -1 when absent.
func (a *apiApp) plainGauge(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := a.metrics.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

func requireChinese(t *testing.T, body string) {
	t.Helper()
	var env struct {
		Error struct{ Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &env), body)
	require.Regexp(t, `\p{Han}`, env.Error.Message)
}
