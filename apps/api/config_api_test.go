package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/redaction"
	"github.com/july/template/core/sysconfig"
)

const configsPath = "/api/v1/system-configs/"

func TestUpdateEachType(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	tests := []struct {
		key, value string
		status     int
		stored     string // config_value after an accepted update
		field      string // details[0].field of a 422
	}{
		{keyText, `"hi there"`, 200, "hi there", ""},
		{keyText, `"` + strings.Repeat("长", 21) + `"`, 422, "", "value"},
		{keyText, `12`, 422, "", "value"},
		{keyCount, `7`, 200, "7", ""},
		{keyCount, `0`, 422, "", "value"},
		{keyCount, `11`, 422, "", "value"},
		{keyCount, `1.5`, 422, "", "value"},
		{keyCount, `"7"`, 422, "", "value"},
		{keyFlag, `true`, 200, "true", ""},
		{keyFlag, `"true"`, 422, "", "value"},
		{keyDoc, `{ "b": [1, 2], "a": null }`, 200, `{"b":[1,2],"a":null}`, ""},
		{keyDoc, `null`, 422, "", "value"},
		{keyMode, `"b"`, 200, "b", ""},
		{keyMode, `"c"`, 422, "", "value"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s=%s", tt.key, tt.value), func(t *testing.T) {
			before, _ := a.row(t, tt.key)
			res := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + tt.key, Token: admin(t), Body: `{"value":` + tt.value + `}`})
			require.Equal(t, tt.status, res.Status, "PUT %s %s: %s", tt.key, tt.value, res.Body)
			after, ok := a.row(t, tt.key)
			if tt.status != http.StatusOK {
				e := res.Error
				require.Equal(t, sysconfig.CodeValueInvalid, e.Code)
				require.Equal(t, tt.field, e.Details[0].Field, "body %s", res.Body)
				require.NotEmpty(t, e.Details[0].Reason)
				require.Equal(t, before, after, "a rejected update changes nothing")
				return
			}
			require.True(t, ok, "row of %s written", tt.key)
			require.Equal(t, tt.stored, after.Value)
			require.Equal(t, before.Version+1, after.Version)
			require.Equal(t, "admin-1", after.UpdatedBy)
			v := decodeView(t, res)
			require.JSONEq(t, tt.value, string(v.Value))
			require.Equal(t, after.Version, v.Version)
			require.Equal(t, fmt.Sprintf(`"%d"`, after.Version), res.Header.Get("ETag"))

			got := a.do(t, apitest.Request{Method: "GET", Path: configsPath + tt.key, Token: admin(t)})
			require.Equal(t, http.StatusOK, got.Status, got.Body)
			require.JSONEq(t, tt.value, string(decodeView(t, got).Value))
		})
	}
	// Audit facts: one record per attempt, with the outcome and code.
	for _, key := range []string{keyText, keyCount, keyFlag, keyDoc, keyMode} {
		var accepted, rejected int
		for _, rec := range a.audits(t, key) {
			switch rec.Outcome {
			case string(sysconfig.OutcomeAccepted):
				accepted++
				require.Empty(t, rec.Code)
			case string(sysconfig.OutcomeRejected):
				rejected++
				require.Equal(t, sysconfig.CodeValueInvalid, rec.Code)
			}
			require.Equal(t, "admin-1", rec.Actor)
			require.Equal(t, configsvc.ResourceType, rec.ResourceType)
			require.NotEmpty(t, rec.RequestID)
		}
		want := 0
		for _, tt := range tests {
			if tt.key == key && tt.status != http.StatusOK {
				want++
			}
		}
		require.Equal(t, 1, accepted, "accepted audits of %s", key)
		require.Equal(t, want, rejected, "rejected audits of %s", key)
	}
}

func TestListAndDefaults(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	res := a.do(t, apitest.Request{Method: "GET", Path: "/api/v1/system-configs?module=test", Token: admin(t)})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	var list struct{ Items []sysconfig.View }
	require.NoError(t, json.Unmarshal([]byte(res.Body), &list))
	var keys []string
	for _, v := range list.Items {
		keys = append(keys, v.Key)
		require.Zero(t, v.Version, "never written: default at version 0")
	}
	require.Equal(t, []string{keyCount, keyDoc, keyFixed, keyFlag, keyMode, keySecret, keyText, keyTier}, keys)

	res = a.do(t, apitest.Request{Method: "GET", Path: "/api/v1/system-configs", Token: admin(t)})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	require.Contains(t, res.Body, `"relay.delivery.batch_size"`, "the template's own keys are listed")

	res = a.do(t, apitest.Request{Method: "GET", Path: "/api/v1/system-configs?module=nope", Token: admin(t)})
	require.JSONEq(t, `{"items":[]}`, res.Body)

	res = a.do(t, apitest.Request{Method: "GET", Path: "/api/v1/system-configs?module=Bad-Module", Token: admin(t)})
	require.Equal(t, http.StatusBadRequest, res.Status)
	require.Equal(t, "module", res.Error.Details[0].Field)
}

func TestUnregisteredAndReadOnly(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	tests := []struct {
		method, key string
		status      int
		code        string
	}{
		{"GET", "test.conf.missing", 404, sysconfig.CodeKeyNotRegistered},
		{"PUT", "test.conf.missing", 404, sysconfig.CodeKeyNotRegistered},
		{"PUT", keyFixed, 409, sysconfig.CodeReadOnly},
		{"GET", keyFixed, 200, ""},
	}
	for _, tt := range tests {
		body := ""
		if tt.method == "PUT" {
			body = `{"value":"x"}`
		}
		res := a.do(t, apitest.Request{Method: tt.method, Path: configsPath + tt.key, Token: admin(t), Body: body})
		require.Equal(t, tt.status, res.Status, "%s %s: %s", tt.method, tt.key, res.Body)
		if tt.code != "" {
			e := res.Error
			require.Equal(t, tt.code, e.Code)
			require.False(t, e.Retryable)
			require.Equal(t, res.Header.Get(httpx.HeaderRequestID), e.RequestID)
		}
	}
	for key, code := range map[string]string{"test.conf.missing": sysconfig.CodeKeyNotRegistered, keyFixed: sysconfig.CodeReadOnly} {
		recs := a.audits(t, key)
		require.Len(t, recs, 1, "one audit for the refused PUT of %s", key)
		require.Equal(t, string(sysconfig.OutcomeRejected), recs[0].Outcome)
		require.Equal(t, code, recs[0].Code)
		_, ok := a.row(t, key)
		require.False(t, ok, "no row for %s", key)
	}
}

func TestAuthenticationAndRole(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	// 401: identical for an existing, a missing and a malformed key.
	var bodies []string
	for _, key := range []string{keyCount, "test.conf.missing", "NOT-A-KEY"} {
		for _, tok := range []string{"", "not-a-jwt", token(t, "x") + "tampered"} {
			res := a.do(t, apitest.Request{Method: "GET", Path: configsPath + key, Token: tok})
			require.Equal(t, http.StatusUnauthorized, res.Status, "GET %s with %q: %s", key, tok, res.Body)
			require.Equal(t, "Bearer", res.Header.Get("WWW-Authenticate"))
			e := res.Error
			e.RequestID = ""
			b, err := json.Marshal(e)
			require.NoError(t, err)
			bodies = append(bodies, string(b))
		}
	}
	for _, b := range bodies {
		require.Equal(t, bodies[0], b, "401 bodies must not depend on the key or the failure")
	}
	res := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + keyCount, Body: `{"value":3}`})
	require.Equal(t, http.StatusUnauthorized, res.Status)
	require.Empty(t, a.audits(t, keyCount), "an unauthenticated caller is not an actor")

	// 403 for a valid token without super_admin, before any lookup.
	ops := token(t, "ops-7", "ops")
	for _, key := range []string{keyCount, "test.conf.missing"} {
		for _, method := range []string{"GET", "PUT"} {
			body := ""
			if method == "PUT" {
				body = `{"value":5}`
			}
			res := a.do(t, apitest.Request{Method: method, Path: configsPath + key, Token: ops, Body: body})
			require.Equal(t, http.StatusForbidden, res.Status, "%s %s: %s", method, key, res.Body)
			require.Equal(t, httpx.CodeForbidden, res.Error.Code)
		}
		recs := a.audits(t, key)
		require.Len(t, recs, 1, "only the PUT of %s is audited", key)
		require.Equal(t, configsvc.CodeForbidden, recs[0].Code)
		require.Equal(t, "ops-7", recs[0].Actor)
		require.Equal(t, string(sysconfig.OutcomeRejected), recs[0].Outcome)
	}
	res = a.do(t, apitest.Request{Method: "GET", Path: "/api/v1/system-configs", Token: ops})
	require.Equal(t, http.StatusForbidden, res.Status)
	_, ok := a.row(t, keyCount)
	require.False(t, ok, "nothing written")
}

func TestVersionConflict(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	path := configsPath + keyCount
	res := a.do(t, apitest.Request{Method: "PUT", Path: path, Token: admin(t), Body: `{"value":2,"version":0}`})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	etag := res.Header.Get("ETag")
	require.Equal(t, `"1"`, etag)

	tests := []struct {
		name   string
		body   string
		header map[string]string
		status int
		code   string
	}{
		{"stale body version", `{"value":3,"version":0}`, nil, 409, sysconfig.CodeVersionConflict},
		{"stale If-Match", `{"value":3}`, map[string]string{"If-Match": `"0"`}, 409, sysconfig.CodeVersionConflict},
		{"future version", `{"value":3,"version":5}`, nil, 409, sysconfig.CodeVersionConflict},
		{"malformed If-Match", `{"value":3}`, map[string]string{"If-Match": "1"}, 400, httpx.CodeRequestInvalid},
		{"disagreeing versions", `{"value":3,"version":1}`, map[string]string{"If-Match": `"0"`}, 400, httpx.CodeRequestInvalid},
		{"current If-Match", `{"value":3}`, map[string]string{"If-Match": etag}, 200, ""},
	}
	for _, tt := range tests {
		res := a.do(t, apitest.Request{Method: "PUT", Path: path, Token: admin(t), Body: tt.body, Header: tt.header})
		require.Equal(t, tt.status, res.Status, "%s: %s", tt.name, res.Body)
		if tt.code == "" {
			continue
		}
		e := res.Error
		require.Equal(t, tt.code, e.Code, tt.name)
		require.False(t, e.Retryable, tt.name)
		if tt.code == sysconfig.CodeVersionConflict {
			require.Contains(t, e.Message, "当前版本 1", "the message names the current version")
		}
	}
	r, _ := a.row(t, keyCount)
	require.Equal(t, row{Value: "3", Type: "int", Version: 2, UpdatedBy: "admin-1"}, r)
	var codes []string
	for _, rec := range a.audits(t, keyCount) {
		codes = append(codes, rec.Outcome+":"+rec.Code)
	}
	require.Equal(t, []string{"accepted:", "rejected:CONFIG_VERSION_CONFLICT", "rejected:CONFIG_VERSION_CONFLICT",
		"rejected:CONFIG_VERSION_CONFLICT", "rejected:REQUEST_INVALID", "rejected:REQUEST_INVALID", "accepted:"}, codes,
		"rule: malformed requests are audited too")
}

func TestConcurrentUpdatesOneWins(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	path := configsPath + keyCount
	for _, base := range []int64{0, 1} { // first write (insert race), then an update race
		type result struct {
			res apitest.Response
			err error
		}
		results := make([]result, 10)
		tok := admin(t)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				body := fmt.Sprintf(`{"value":%d,"version":%d}`, i+1, base)
				r := &results[i]
				r.res, r.err = a.send(apitest.Request{Method: "PUT", Path: path, Token: tok, Body: body})
			})
		}
		wg.Wait()
		count := map[int]int{}
		for _, r := range results {
			require.NoError(t, r.err)
			apitest.OpenAPI(t).Check(t, r.res)
			count[r.res.Status]++
		}
		require.Equal(t, map[int]int{200: 1, 409: 9}, count, "base version %d", base)
		r, _ := a.row(t, keyCount)
		require.Equal(t, base+1, r.Version)
	}
	var accepted, conflicts int
	for _, rec := range a.audits(t, keyCount) {
		switch {
		case rec.Outcome == string(sysconfig.OutcomeAccepted):
			accepted++
		case rec.Code == sysconfig.CodeVersionConflict:
			conflicts++
		}
	}
	require.Equal(t, 2, accepted)
	require.Equal(t, 18, conflicts)
}

func TestSensitiveValueNeverShown(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	const secretValue = "S3cr3t-Value-Z9"
	tooLong := "Too-Long-Secret-" + strings.Repeat("Q", 30)
	res := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + keySecret, Token: admin(t), Body: `{"value":"` + secretValue + `"}`})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	require.JSONEq(t, `"******"`, string(decodeView(t, res).Value))
	bad := a.do(t, apitest.Request{Method: "PUT", Path: configsPath + keySecret, Token: admin(t), Body: `{"value":"` + tooLong + `"}`})
	require.Equal(t, http.StatusUnprocessableEntity, bad.Status, bad.Body)
	get := a.do(t, apitest.Request{Method: "GET", Path: configsPath + keySecret, Token: admin(t)})
	list := a.do(t, apitest.Request{Method: "GET", Path: "/api/v1/system-configs?module=test", Token: admin(t)})
	v, err := a.svc.Value(t.Context(), keySecret)
	require.NoError(t, err)
	require.Equal(t, secretValue, v.Str(), "business code reads the real value")

	r, _ := a.row(t, keySecret)
	require.Equal(t, secretValue, r.Value, "stored as is")
	for _, rec := range a.audits(t, keySecret) {
		for _, s := range []string{rec.Before, rec.After, rec.Reason} {
			require.NotContains(t, s, "S3cr3t")
			require.NotContains(t, s, "Too-Long")
		}
	}
	for name, text := range map[string]string{"PUT": res.Body, "422": bad.Body, "GET": get.Body, "list": list.Body, "logs": a.logs.String()} {
		require.NotContains(t, text, "S3cr3t", "%s leaks the secret", name)
		require.NotContains(t, text, "Too-Long", "%s leaks the refused secret", name)
	}
	require.Contains(t, a.logs.String(), `"route":"/api/v1/system-configs/:key"`, "the access log did log the requests")
}

func TestCacheHitAndInvalidation(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	path := configsPath + keyCount
	res := a.do(t, apitest.Request{Method: "PUT", Path: path, Token: admin(t), Body: `{"value":3}`})
	require.Equal(t, http.StatusOK, res.Status, res.Body)

	v, err := a.svc.Value(t.Context(), keyCount)
	require.NoError(t, err)
	require.EqualValues(t, 3, v.Int(), "read through to Postgres, cache filled")

	// Behind the API's back: the cache keeps answering until invalidated.
	_, err = a.db.Bun.ExecContext(t.Context(), `UPDATE tb_system_config SET config_value = '9' WHERE config_key = ?`, keyCount)
	require.NoError(t, err)
	v, err = a.svc.Value(t.Context(), keyCount)
	require.NoError(t, err)
	require.EqualValues(t, 3, v.Int(), "served from the cache")
	get := a.do(t, apitest.Request{Method: "GET", Path: path, Token: admin(t)})
	require.JSONEq(t, `9`, string(decodeView(t, get).Value), "the admin API reads Postgres, the truth")

	res = a.do(t, apitest.Request{Method: "PUT", Path: path, Token: admin(t), Body: `{"value":5,"version":1}`})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	v, err = a.svc.Value(t.Context(), keyCount)
	require.NoError(t, err)
	require.EqualValues(t, 5, v.Int(), "the update invalidated the cache")
	require.Zero(t, a.counter(t, "config_alerts_total", "code", configsvc.CodeInvalidationFailed))
}

func TestRedisDown(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{redisURL: "redis://127.0.0.1:1/0"})
	path := configsPath + keyCount

	get := a.do(t, apitest.Request{Method: "GET", Path: path, Token: admin(t)})
	require.Equal(t, http.StatusOK, get.Status, get.Body)
	res := a.do(t, apitest.Request{Method: "PUT", Path: path, Token: admin(t), Body: `{"value":4,"version":0}`})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	get = a.do(t, apitest.Request{Method: "GET", Path: path, Token: admin(t)})
	require.JSONEq(t, `4`, string(decodeView(t, get).Value))
	v, err := a.svc.Value(t.Context(), keyCount)
	require.NoError(t, err)
	require.EqualValues(t, 4, v.Int(), "reads fall back to Postgres")
	r, _ := a.row(t, keyCount)
	require.Equal(t, int64(1), r.Version)

	require.Equal(t, 1.0, a.counter(t, "config_alerts_total", "code", configsvc.CodeInvalidationFailed))
	var alert map[string]any
	for _, l := range a.logs.Lines(t) {
		if l["alert_code"] == configsvc.CodeInvalidationFailed {
			alert = l
		}
	}
	require.NotNil(t, alert, "alert line in logs: %s", a.logs.String())
	require.Equal(t, "ERROR", alert["level"])
	require.Equal(t, keyCount, alert["config_key"])
	require.Equal(t, res.Header.Get(httpx.HeaderRequestID), alert["request_id"])

	ready := a.do(t, apitest.Request{Method: "GET", Path: "/readyz"})
	require.Equal(t, http.StatusOK, ready.Status, "Redis down is degraded, not unready")
	require.JSONEq(t, `{"status":"degraded","degraded":["redis"]}`, ready.Body)
	require.NotContains(t, ready.Body, "127.0.0.1")
}

// The list's access line keeps its readable summary (an operator must
// still see which keys a request touched): the
// route logs under PolicyConfig, so the "key" members (config key names)
// stay and the registry has masked the sensitive values already. The
// app's root logger must not undo that by reading the redacted body
// again under the default policy (where "key" is a secret name).
func TestListAccessLineKeepsTheKeyNames(t *testing.T) {
	t.Parallel()
	a := startAPI(t, appOpts{})
	res := a.do(t, apitest.Request{Method: "GET", Path: "/api/v1/system-configs?module=test", Token: admin(t)})
	require.Equal(t, http.StatusOK, res.Status, res.Body)

	var text string
	for _, rec := range a.logs.Records(t, "access") {
		if rec["route"] != "/api/v1/system-configs" {
			continue
		}
		resp, _ := rec["resp"].(map[string]any)
		require.NotNil(t, resp, "access line has a resp group: %v", rec)
		text, _ = resp["text"].(string)
	}
	require.NotEmpty(t, text, "an access line for the list: %s", a.logs.String())
	require.NotEqual(t, redaction.Redacted, text, "rule: the list's summary is not wiped by the root logger")
	for _, key := range []string{keyCount, keyText, keySecret} {
		require.Contains(t, text, `"key":"`+key+`"`, "rule: config key names stay readable in the access log")
	}
	require.Contains(t, text, `"******"`, "the sensitive value is masked by the registry")
	require.NotContains(t, text, "tier-alpha-9f3", "a sensitive key's enum values never show")
}
