package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/apps/internal/testdomain"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// TestAccessLogBodyCapComesFromSystemConfig: the registered key
// http.access_log.body_cap_bytes, read at start, caps every logged body
// after redaction.
func TestAccessLogBodyCapComesFromSystemConfig(t *testing.T) {
	t.Parallel()

	a := startAPI(t, appOpts{seed: func(t *testing.T, db *testinfra.DB) {
		store, err := pgconfig.NewStore(db.Bun, pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{}))
		require.NoError(t, err)
		reg := sysconfig.NewRegistry()
		require.NoError(t, configsvc.RegisterTemplateKeys(reg))
		spec, _ := reg.Lookup(configsvc.KeyAccessLogBodyBytes)
		_, err = store.Apply(t.Context(), sysconfig.Plan{Spec: spec, NewText: "2048", NewVersion: 1},
			ports.AuditRecord{Action: "config.update", ResourceType: "system_config", ResourceID: spec.Key, Outcome: "accepted"}, time.Now())
		require.NoError(t, err)
	}})
	items := strings.TrimSuffix(strings.Repeat(`{"sku":"SKU-0001","qty":1},`, 400), ",")
	body := `{"amount":100,"items":[` + items + `]}`
	_, _ = a.send(apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: writer(t, "agent-cap"), Body: body,
		Header: map[string]string{"Idempotency-Key": "cap-test-0001"}})

	var found bool
	for _, line := range strings.Split(a.logs.String(), "\n") {
		var entry struct {
			Msg string `json:"msg"`
			Req struct {
				Text      string `json:"text"`
				Truncated bool   `json:"truncated"`
			} `json:"req"`
		}
		if json.Unmarshal([]byte(line), &entry) != nil || entry.Msg != "access" || entry.Req.Text == "" {
			continue
		}
		found = true
		require.True(t, entry.Req.Truncated, "a 10 KB body is over the 2 KB cap: %s", line)
		require.LessOrEqual(t, len(entry.Req.Text), 2048, "the cap comes from the stored key")
	}
	require.True(t, found, "an access line with the request body: %s", a.logs.String())
}

// Item 10 (api): a super admin's change of the body cap applies to the
// running API within the refresh bound, without a restart.
func TestAccessLogBodyCapAppliesAtRuntime(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{tune: func(c *config) { c.ConfigRefresh = 100 * time.Millisecond }})
	items := strings.TrimSuffix(strings.Repeat(`{"sku":"SKU-0001","qty":1},`, 400), ",")
	body := `{"amount":100,"items":[` + items + `]}`
	agent := writer(t, "agent-cap-rt")
	truncated := func(key string) (bool, int) {
		t.Helper()
		_, _ = a.send(apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: agent, Body: body, Header: map[string]string{"Idempotency-Key": key, "X-Request-ID": key}})
		for _, line := range strings.Split(a.logs.String(), "\n") {
			var entry struct {
				Msg       string `json:"msg"`
				RequestID string `json:"request_id"`
				Req       struct {
					Text      string `json:"text"`
					Truncated bool   `json:"truncated"`
				} `json:"req"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "access" && entry.RequestID == key && entry.Req.Text != "" {
				return entry.Req.Truncated, len(entry.Req.Text)
			}
		}
		t.Fatalf("no access line for %s: %s", key, a.logs.String())
		return false, 0
	}
	cut, _ := truncated("cap-rt-00001")
	require.False(t, cut, "a 10 KB body is under the default 50 KB cap")
	res := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + configsvc.KeyAccessLogBodyBytes, Token: admin(t), Body: `{"value":2048}`})
	require.Equal(t, 200, res.Status, res.Body)
	time.Sleep(200 * time.Millisecond) // past the refresh bound
	cut, n := truncated("cap-rt-00002")
	require.True(t, cut, "the new cap applies without a restart")
	require.LessOrEqual(t, n, 2048)
}
