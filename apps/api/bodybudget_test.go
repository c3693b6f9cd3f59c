// examples: delete this file (it tests through the examples' routes; make remove-examples)

package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
)

// Item 4: request bodies in flight share a budget; one that does not fit
// answers 503 SERVER_BUSY with Retry-After instead of growing memory, and
// the budget frees when the holder finishes.
func TestBodyBudget(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{tune: func(c *config) { c.BodyBudget = 1536 << 10 }})
	agent := token(t, "budget-agent", "agent")
	body := `{"amount_cents":1000,"channel":"wechat","pad":"` + strings.Repeat("x", 900<<10) + `"}`

	// A slow upload holds its declared 900 KB for as long as it lasts.
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(t.Context(), "POST", a.url+"/api/v1/topups", pr)
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
	time.Sleep(200 * time.Millisecond)

	busy := apitest.Do(t, a.url, apitest.Request{Method: "POST", Path: "/api/v1/topups", Token: agent, Body: body, Header: map[string]string{"Idempotency-Key": "budget-fast-1"}})
	require.Equal(t, http.StatusServiceUnavailable, busy.Status, busy.Body)
	require.Equal(t, "SERVER_BUSY", busy.Error.Code)
	require.True(t, busy.Error.Retryable)
	require.Equal(t, "1", busy.Header.Get("Retry-After"))
	small := a.do(t, apitest.Request{Method: "GET", Path: "/api/v1/wallets/me", Token: agent})
	require.Equal(t, http.StatusOK, small.Status, "requests without a body are not limited")

	_, err = pw.Write([]byte(body[100:]))
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	require.Equal(t, http.StatusCreated, <-done)
	ok := a.do(t, apitest.Request{Method: "POST", Path: "/api/v1/topups", Token: agent, Body: body, Header: map[string]string{"Idempotency-Key": "budget-fast-1"}})
	require.Equal(t, http.StatusCreated, ok.Status, "the budget frees when the holder ends: %s", fmt.Sprint(ok.Body[:min(len(ok.Body), 200)]))
}
