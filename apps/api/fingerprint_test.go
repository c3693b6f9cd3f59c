package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/apps/internal/testdomain"
)

// Item 13: the create's fingerprint is its canonical business fields: a
// harmless extra field, another key order or number spelling replays the
// original answer; a changed business field is 422 IDEMPOTENCY_KEY_REUSED,
// whatever it is named and however deep a transport field hides.
func TestFingerprintIsTheCommand(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	agent := writer(t, "fp-agent")
	post := func(key, body string) response {
		t.Helper()
		return a.do(t, apitest.Request{Method: "POST", Path: testdomain.RouteOrders, Token: agent, Body: body, Header: map[string]string{"Idempotency-Key": key}})
	}
	first := post("fp-key-0001", `{"amount":1000,"note":"a"}`)
	require.Equal(t, http.StatusCreated, first.Status, first.Body)
	for name, body := range map[string]string{
		"extra field":        `{"amount":1000,"note":"a","client_note":"retry"}`,
		"extra nested field": `{"amount":1000,"note":"a","meta":{"ts":123,"sign":"abc"}}`,
		"key order, 1e3":     `{"note":"a","amount":1e3}`,
	} {
		res := post("fp-key-0001", body)
		require.Equal(t, http.StatusCreated, res.Status, "%s: %s", name, res.Body)
		require.Equal(t, "true", res.Header.Get("Idempotent-Replayed"), name)
		require.JSONEq(t, first.Body, res.Body, name)
	}
	changed := post("fp-key-0001", `{"amount":2000,"note":"a"}`)
	require.Equal(t, http.StatusUnprocessableEntity, changed.Status, changed.Body)
	require.Equal(t, "IDEMPOTENCY_KEY_REUSED", changed.Error.Code)
	changed = post("fp-key-0001", `{"amount":1000,"note":"b"}`)
	require.Equal(t, http.StatusUnprocessableEntity, changed.Status, changed.Body)
	require.Equal(t, "IDEMPOTENCY_KEY_REUSED", changed.Error.Code)
}
