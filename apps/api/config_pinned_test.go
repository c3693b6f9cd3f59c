package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/sysconfig"
)

// Item 10: a key a running relay takes from its environment is shown as
// pinned_by, and an update of it is refused (409 CONFIG_KEY_PINNED,
// audited) instead of answering 200 for a change that does nothing there.
// A pin that was not announced again within the TTL (a crashed relay) no
// longer counts.
func TestPinnedKeyIsShownAndRefused(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	adm := admin(t)
	pins, err := pgconfig.NewPins(a.db.Bun)
	require.NoError(t, err)
	path := configsPath + configsvc.KeyRelayBatchSize
	announce := func(at time.Time) {
		t.Helper()
		require.NoError(t, pins.Announce(t.Context(), "relay-a",
			[]sysconfig.Pin{{Key: configsvc.KeyRelayBatchSize, Source: "env RELAY_BATCH_SIZE", Owner: "relay-a"}}, at))
	}

	announce(time.Now())
	get := a.do(t, apitest.Request{Method: "GET", Path: path, Token: adm})
	require.Equal(t, http.StatusOK, get.Status, get.Body)
	require.Contains(t, get.Body, `"pinned_by":"env RELAY_BATCH_SIZE (relay-a)"`)
	list := a.do(t, apitest.Request{Method: "GET", Path: "/api/v1/system-configs?module=relay", Token: adm})
	require.Contains(t, list.Body, `"pinned_by":"env RELAY_BATCH_SIZE (relay-a)"`, "the list shows pins too")

	put := a.do(t, apitest.Request{Method: "PUT", Path: path, Token: adm, Body: `{"value":250}`})
	require.Equal(t, http.StatusConflict, put.Status, put.Body)
	require.Contains(t, put.Body, `"code":"CONFIG_KEY_PINNED"`)
	require.Contains(t, put.Body, "RELAY_BATCH_SIZE", "the message names the pin")
	_, stored := a.row(t, configsvc.KeyRelayBatchSize)
	require.False(t, stored, "rule: a refused update writes nothing")
	audits := a.audits(t, configsvc.KeyRelayBatchSize)
	require.Len(t, audits, 1)
	require.Equal(t, sysconfig.CodeKeyPinned, audits[0].Code, "rule: the refusal is audited")

	announce(time.Now().Add(-configsvc.DefaultPinTTL - time.Minute)) // stale: the relay stopped announcing
	get = a.do(t, apitest.Request{Method: "GET", Path: path, Token: adm})
	require.NotContains(t, get.Body, "pinned_by", "a stale pin is not shown")
	put = a.do(t, apitest.Request{Method: "PUT", Path: path, Token: adm, Body: `{"value":250}`})
	require.Equal(t, http.StatusOK, put.Status, put.Body)
}
