package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/core/idempotency"
	"github.com/july/template/examples/devices"
	"github.com/july/template/examples/topup"
)

// exampleCalls covers every documented status of the example domains'
// operations on a. The requests whose answers later ones need (an order
// id, a task id and its ETag, a cancelled task) are sent through record
// here; the rest are returned for TestOpenAPIContract to send.
func exampleCalls(t *testing.T, a *apiApp, record func(*apiApp, req) response) []call {
	t.Helper()
	agent, other := token(t, "contract-agent", "agent"), token(t, "contract-other", "agent")
	idem := func(key string) map[string]string { return map[string]string{"Idempotency-Key": key} }
	// The busy keys are new each run: Redis outlives the test's database.
	topupBusy, devicesBusy := "contract-topup-busy-"+rand.Text(), "contract-devices-busy-"+rand.Text()

	// topup: create an order to read back.
	order := `{"amount_cents":1000,"channel":"wechat"}`
	res := record(a, req{method: "POST", path: "/api/v1/topups", token: agent, body: order, header: idem("contract-topup-1")})
	require.Equal(t, http.StatusCreated, res.status, res.body)
	var o struct {
		TopupID string `json:"topup_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.body), &o), res.body)
	require.NotEmpty(t, o.TopupID, res.body)
	holdIdemGuard(t, a, topup.OperationCreate, "contract-agent", topupBusy)

	// devices: a pending task, its ETag, and a cancelled (finished) task.
	csv := "device_sn,target_agent_id\nSN-0001,agent-9\n"
	upload, ct := multipartBody(t, devices.FormField, csv)
	uploadHdr := func(key string) map[string]string {
		return map[string]string{"Content-Type": ct, "Idempotency-Key": key}
	}
	taskID := func(key string) string {
		t.Helper()
		res := record(a, req{method: "POST", path: "/api/v1/device-assignments", token: agent, body: upload, header: uploadHdr(key)})
		require.Equal(t, http.StatusAccepted, res.status, res.body)
		var c devices.Created
		require.NoError(t, json.Unmarshal([]byte(res.body), &c), res.body)
		require.NotEmpty(t, c.TaskID, res.body)
		return c.TaskID
	}
	pending, finished := taskID("contract-devices-1"), taskID("contract-devices-2")
	res = record(a, req{method: "POST", path: "/api/v1/device-assignments/" + finished + "/cancel", token: agent})
	require.Equal(t, http.StatusOK, res.status, res.body)
	res = record(a, req{method: "GET", path: "/api/v1/device-assignments/" + pending, token: agent})
	require.Equal(t, http.StatusOK, res.status, res.body)
	etag := res.header.Get("ETag")
	require.NotEmpty(t, etag, "task GET must send an ETag")
	holdIdemGuard(t, a, devices.OperationAssign, "contract-agent", devicesBusy)
	noFile, noFileCT := multipartBody(t, "other", csv)
	reused, reusedCT := multipartBody(t, devices.FormField, csv+"SN-0002,agent-9\n") // another body, a used key
	huge, hugeCT := multipartBody(t, devices.FormField, "device_sn,target_agent_id\n"+strings.Repeat("x", devices.MaxFileBytes+100<<10))
	missing := "00000000-0000-4000-8000-000000000000"

	topups, assign := "/api/v1/topups", "/api/v1/device-assignments"
	task := assign + "/"
	return []call{
		{a, req{method: "POST", path: topups, token: agent, body: `[]`, header: idem("contract-topup-2")}},
		{a, req{method: "POST", path: topups, body: order, header: idem("contract-topup-3")}},
		{a, req{method: "POST", path: topups, token: agent, body: order, header: idem(topupBusy)}},
		{a, req{method: "POST", path: topups, token: agent, body: `{"amount_cents":0,"channel":"wechat"}`, header: idem("contract-topup-4")}},
		{a, req{method: "GET", path: topups + "/" + o.TopupID, token: agent}},
		{a, req{method: "GET", path: topups + "/" + o.TopupID}},
		{a, req{method: "GET", path: topups + "/" + o.TopupID, token: other}},
		{a, req{method: "GET", path: "/api/v1/wallets/me", token: agent}},
		{a, req{method: "GET", path: "/api/v1/wallets/me"}},

		{a, req{method: "POST", path: assign, token: agent, body: noFile, header: map[string]string{"Content-Type": noFileCT, "Idempotency-Key": "contract-devices-3"}}},
		{a, req{method: "POST", path: assign, body: upload, header: uploadHdr("contract-devices-4")}},
		{a, req{method: "POST", path: assign, token: agent, body: upload, header: uploadHdr(devicesBusy)}},
		{a, req{method: "POST", path: assign, token: agent, body: huge, header: map[string]string{"Content-Type": hugeCT, "Idempotency-Key": "contract-devices-5"}}},
		{a, req{method: "POST", path: assign, token: agent, body: reused, header: map[string]string{"Content-Type": reusedCT, "Idempotency-Key": "contract-devices-1"}}},
		{a, req{method: "GET", path: task + pending, token: agent, header: map[string]string{"If-None-Match": etag}}},
		{a, req{method: "GET", path: task + pending}},
		{a, req{method: "GET", path: task + missing, token: agent}},
		{a, req{method: "GET", path: task + pending + "/failures", token: agent}},
		{a, req{method: "GET", path: task + pending + "/failures?page=0", token: agent}},
		{a, req{method: "GET", path: task + pending + "/failures"}},
		{a, req{method: "GET", path: task + pending + "/failures", token: other}},
		{a, req{method: "POST", path: task + missing + "/cancel", token: agent}},
		{a, req{method: "POST", path: task + pending + "/cancel"}},
		{a, req{method: "POST", path: task + finished + "/cancel", token: agent}},
	}
}

// holdIdemGuard holds, until the test ends, the Redis guard idemhttp takes
// for (operation, principal, key), so a request with that key gets 409
// IDEMPOTENCY_IN_PROGRESS.
func holdIdemGuard(t *testing.T, a *apiApp, operation, principal, key string) {
	t.Helper()
	name := idemhttp.GuardName(idemhttp.Key{Scope: idempotency.Scope{Principal: principal, Operation: operation}, RequestID: key})
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
