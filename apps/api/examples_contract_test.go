// examples: delete this file (it tests through the examples' routes; make remove-examples)

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/ports"
	"github.com/july/template/examples/devices"
	"github.com/july/template/examples/topup"
)

// exampleCalls covers every documented status of the example domains'
// operations on a. The requests whose answers later ones need (an order
// id, a task id and its ETag, a cancelled task) are sent through record
// here; the rest are returned for TestOpenAPIContract to send.
func exampleCalls(t *testing.T, a *apiApp, record func(*apiApp, apitest.Request) response) []call {
	t.Helper()
	agent, other := token(t, "contract-agent", topup.RoleAgent), token(t, "contract-other", topup.RoleAgent)
	noRole := token(t, "contract-agent") // authenticated, without a role: 403 on every route
	idem := func(key string) map[string]string { return map[string]string{"Idempotency-Key": key} }
	// The busy keys are new each run: Redis outlives the test's database.
	topupBusy, devicesBusy := "contract-topup-busy-"+rand.Text(), "contract-devices-busy-"+rand.Text()

	// topup: create an order to read back.
	order := `{"amount_cents":1000,"channel":"wechat"}`
	res := record(a, apitest.Request{Method: "POST", Path: "/api/v1/topups", Token: agent, Body: order, Header: idem("contract-topup-1")})
	require.Equal(t, http.StatusCreated, res.Status, res.Body)
	var o struct {
		TopupID string `json:"topup_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Body), &o), res.Body)
	require.NotEmpty(t, o.TopupID, res.Body)
	holdIdemGuard(t, a, topup.OperationCreate, "contract-agent", topupBusy)

	// devices: a pending task, its ETag, and a cancelled (finished) task.
	csv := "device_sn,target_agent_id\nSN-0001,agent-9\n"
	upload, ct := multipartBody(t, devices.FormField, csv)
	uploadHdr := func(key string) map[string]string {
		return map[string]string{"Content-Type": ct, "Idempotency-Key": key}
	}
	taskID := func(key string) string {
		t.Helper()
		res := record(a, apitest.Request{Method: "POST", Path: "/api/v1/device-assignments", Token: agent, Body: upload, Header: uploadHdr(key)})
		require.Equal(t, http.StatusAccepted, res.Status, res.Body)
		var c devices.Created
		require.NoError(t, json.Unmarshal([]byte(res.Body), &c), res.Body)
		require.NotEmpty(t, c.TaskID, res.Body)
		return c.TaskID
	}
	pending, finished, completed := taskID("contract-devices-1"), taskID("contract-devices-2"), taskID("contract-devices-6")
	res = record(a, apitest.Request{Method: "POST", Path: "/api/v1/device-assignments/" + finished + "/cancel", Token: agent})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	// Completed as a worker would leave it: a cancel of it is 409.
	_, err := a.db.Bun.ExecContext(t.Context(), `UPDATE ex_devices_task SET status = 3, total_count = 1, success_count = 1,
		started_at = now(), finished_at = now(), updated_at = now() WHERE id = ?`, completed)
	require.NoError(t, err)
	res = record(a, apitest.Request{Method: "GET", Path: "/api/v1/device-assignments/" + pending, Token: agent})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	etag := res.Header.Get("ETag")
	require.NotEmpty(t, etag, "task GET must send an ETag")
	holdIdemGuard(t, a, devices.OperationAssign, "contract-agent", devicesBusy)
	noFile, noFileCT := multipartBody(t, "other", csv)
	reused, reusedCT := multipartBody(t, devices.FormField, csv+"SN-0002,agent-9\n") // another body, a used key
	huge, hugeCT := multipartBody(t, devices.FormField, "device_sn,target_agent_id\n"+strings.Repeat("x", devices.MaxFileBytes+100<<10))
	missing := "00000000-0000-4000-8000-000000000000"

	// One principal's uploads per minute are bounded: the next is 429.
	flooder := token(t, "contract-devices-flooder", "agent")
	for i := range devices.DefaultUploadsPerMinute {
		res := record(a, apitest.Request{Method: "POST", Path: "/api/v1/device-assignments", Token: flooder, Body: upload, Header: uploadHdr(fmt.Sprintf("contract-flood-%03d", i))})
		require.Equal(t, http.StatusAccepted, res.Status, res.Body)
	}

	topups, assign := "/api/v1/topups", "/api/v1/device-assignments"
	task := assign + "/"
	return []call{
		{a, apitest.Request{Method: "POST", Path: assign, Token: flooder, Body: upload, Header: uploadHdr("contract-flood-over")}},
		{a, apitest.Request{Method: "POST", Path: topups, Token: agent, Body: `[]`, Header: idem("contract-topup-2")}},
		{a, apitest.Request{Method: "POST", Path: topups, Body: order, Header: idem("contract-topup-3")}},
		{a, apitest.Request{Method: "POST", Path: topups, Token: agent, Body: order, Header: idem(topupBusy)}},
		{a, apitest.Request{Method: "POST", Path: topups, Token: agent, Body: `{"amount_cents":0,"channel":"wechat"}`, Header: idem("contract-topup-4")}},
		{a, apitest.Request{Method: "POST", Path: topups, Token: agent, Body: order, Header: map[string]string{"Idempotency-Key": "contract-topup-5", "Content-Type": "text/plain"}}},
		{a, apitest.Request{Method: "GET", Path: topups + "/not-a-uuid", Token: agent}},
		{a, apitest.Request{Method: "GET", Path: task + "not-a-uuid", Token: agent}},
		{a, apitest.Request{Method: "POST", Path: task + "not-a-uuid/cancel", Token: agent}},
		{a, apitest.Request{Method: "GET", Path: topups + "/" + o.TopupID, Token: agent}},
		{a, apitest.Request{Method: "GET", Path: topups + "/" + o.TopupID}},
		{a, apitest.Request{Method: "GET", Path: topups + "/" + o.TopupID, Token: other}},
		{a, apitest.Request{Method: "GET", Path: "/api/v1/wallets/me", Token: agent}},
		{a, apitest.Request{Method: "GET", Path: "/api/v1/wallets/me"}},

		{a, apitest.Request{Method: "POST", Path: assign, Token: agent, Body: noFile, Header: map[string]string{"Content-Type": noFileCT, "Idempotency-Key": "contract-devices-3"}}},
		{a, apitest.Request{Method: "POST", Path: assign, Body: upload, Header: uploadHdr("contract-devices-4")}},
		{a, apitest.Request{Method: "POST", Path: assign, Token: agent, Body: upload, Header: uploadHdr(devicesBusy)}},
		{a, apitest.Request{Method: "POST", Path: assign, Token: agent, Body: huge, Header: map[string]string{"Content-Type": hugeCT, "Idempotency-Key": "contract-devices-5"}}},
		{a, apitest.Request{Method: "POST", Path: assign, Token: agent, Body: reused, Header: map[string]string{"Content-Type": reusedCT, "Idempotency-Key": "contract-devices-1"}}},
		{a, apitest.Request{Method: "GET", Path: task + pending, Token: agent, Header: map[string]string{"If-None-Match": etag}}},
		{a, apitest.Request{Method: "GET", Path: task + pending}},
		{a, apitest.Request{Method: "GET", Path: task + missing, Token: agent}},
		{a, apitest.Request{Method: "GET", Path: task + pending + "/failures", Token: agent}},
		{a, apitest.Request{Method: "GET", Path: task + pending + "/failures?page=0", Token: agent}},
		{a, apitest.Request{Method: "GET", Path: task + pending + "/failures"}},
		{a, apitest.Request{Method: "GET", Path: task + pending + "/failures", Token: other}},
		{a, apitest.Request{Method: "POST", Path: task + missing + "/cancel", Token: agent}},
		{a, apitest.Request{Method: "POST", Path: task + pending + "/cancel"}},
		{a, apitest.Request{Method: "POST", Path: task + finished + "/cancel", Token: agent}},
		{a, apitest.Request{Method: "POST", Path: task + completed + "/cancel", Token: agent}},

		{a, apitest.Request{Method: "POST", Path: topups, Token: noRole, Body: order, Header: idem("contract-topup-6")}},
		{a, apitest.Request{Method: "GET", Path: topups + "/" + o.TopupID, Token: noRole}},
		{a, apitest.Request{Method: "GET", Path: "/api/v1/wallets/me", Token: noRole}},
		{a, apitest.Request{Method: "POST", Path: assign, Token: noRole, Body: upload, Header: uploadHdr("contract-devices-7")}},
		{a, apitest.Request{Method: "GET", Path: task + pending, Token: noRole}},
		{a, apitest.Request{Method: "GET", Path: task + pending + "/failures", Token: noRole}},
		{a, apitest.Request{Method: "POST", Path: task + pending + "/cancel", Token: noRole}},
	}
}

// holdIdemGuard holds, until the test ends, the Redis guard idemhttp takes
// for (operation, principal, key), so a request with that key gets 409
// IDEMPOTENCY_IN_PROGRESS.
func holdIdemGuard(t *testing.T, a *apiApp, operation, principal, key string) {
	t.Helper()
	name := idemhttp.GuardName(ports.IdempotencyKey{Scope: idempotency.Scope{Principal: principal, Operation: operation}, RequestID: key})
	ok, err := a.guard.Acquire(t.Context(), name, "contract-test", 10*time.Second)
	require.NoError(t, err, "acquire guard %s", name)
	require.True(t, ok, "guard %s is free", name)
	t.Cleanup(func() {
		_, err := a.guard.Release(context.Background(), name, "contract-test")
		require.NoError(t, err, "release guard %s", name)
	})
}

// multipartBody is a multipart/form-data body with one file part.
func multipartBody(t *testing.T, field, content string) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile(field, "devices.csv")
	require.NoError(t, err)
	_, err = fw.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	return buf.String(), mw.FormDataContentType()
}
