package topup_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/examples/topup"
)

const createBody = `{"amount_cents":1500,"channel":"wechat"}`

func TestCreateAnswersOrderAndAppendsEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})

	r := e.create(t, "agent-1", "topup-req-0001", createBody)
	require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Body)
	require.Equal(t, "topup-req-0001", r.Header.Get("X-Request-ID"))
	o := decodeOrder(t, r)
	require.NotEmpty(t, o.TopupID)
	require.Equal(t, "agent-1", o.AgentID)
	require.Equal(t, "created", o.Status)
	require.EqualValues(t, 1500, o.AmountCents)
	require.Equal(t, topup.ChannelWeChat, o.Channel)
	require.True(t, strings.HasPrefix(o.PayURL, topup.DefaultPayBaseURL+"?order="+o.TopupID+"&sign="), "pay_url %s", o.PayURL)

	// The event went out in the same transaction, with the chain's ids.
	var ev struct {
		EventType     string          `bun:"event_type"`
		RequestID     string          `bun:"request_id"`
		CorrelationID string          `bun:"correlation_id"`
		AggregateID   string          `bun:"aggregate_id"`
		Payload       json.RawMessage `bun:"payload"`
	}
	require.NoError(t, e.db.NewSelect().TableExpr("tb_outbox_event").
		Column("event_type", "request_id", "correlation_id", "aggregate_id", "payload").Scan(t.Context(), &ev))
	require.Equal(t, topup.EventCreated, ev.EventType)
	require.Equal(t, "topup-req-0001", ev.RequestID, "request_id is the HTTP request's id")
	require.Equal(t, o.TopupID, ev.CorrelationID, "correlation_id is the order id")
	require.Equal(t, o.TopupID, ev.AggregateID)
	require.JSONEq(t, fmt.Sprintf(`{"topup_id":%q,"agent_id":"agent-1","amount_cents":1500,"channel":"wechat"}`, o.TopupID), string(ev.Payload))
	require.NotContains(t, string(ev.Payload), "pay_url", "the private link stays out of the event")

	got := e.do(t, req{method: http.MethodGet, path: "/api/v1/topups/" + o.TopupID, agent: "agent-1"})
	require.Equal(t, http.StatusOK, got.Status, "body %s", got.Body)
	require.Equal(t, o, decodeOrder(t, got), "GET shows what POST answered")

	w := decodeWallet(t, e.do(t, req{method: http.MethodGet, path: "/api/v1/wallets/me", agent: "agent-1"}))
	require.Equal(t, topup.WalletView{AgentID: "agent-1", LedgerEntries: []topup.LedgerEntryView{}}, w, "zero wallet before the credit")
}

func TestCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})

	first := e.create(t, "agent-1", "topup-req-0002", createBody)
	require.Equal(t, http.StatusCreated, first.Status, "body %s", first.Body)
	require.Empty(t, first.Header.Get(idemhttp.HeaderReplayed))

	// Same key, same body (other spacing and key order): the original answer.
	again := e.create(t, "agent-1", "topup-req-0002", `{ "channel": "wechat", "amount_cents": 1500 }`)
	require.Equal(t, http.StatusCreated, again.Status, "body %s", again.Body)
	require.Equal(t, "true", again.Header.Get(idemhttp.HeaderReplayed))
	require.Equal(t, first.Body, again.Body, "rule: a replay is the original body, byte for byte")
	require.Equal(t, first.Header.Get("Content-Type"), again.Header.Get("Content-Type"), "rule: a replay has the original Content-Type")

	// Same key, different body: 422 and nothing written.
	reused := e.create(t, "agent-1", "topup-req-0002", `{"amount_cents":1501,"channel":"wechat"}`)
	require.Equal(t, http.StatusUnprocessableEntity, reused.Status, "body %s", reused.Body)
	require.Equal(t, idemhttp.CodeKeyReused, reused.Error.Code)

	require.Equal(t, 1, e.count(t, "ex_topup_order", ""))
	require.Equal(t, 1, e.count(t, "tb_outbox_event", ""))

	// Another agent's key space is its own.
	other := e.create(t, "agent-2", "topup-req-0002", createBody)
	require.Equal(t, http.StatusCreated, other.Status, "body %s", other.Body)
	require.Empty(t, other.Header.Get(idemhttp.HeaderReplayed))
	require.NotEqual(t, decodeOrder(t, first).TopupID, decodeOrder(t, other).TopupID)
	require.Equal(t, 2, e.count(t, "ex_topup_order", ""))
	require.Equal(t, 2, e.count(t, "tb_outbox_event", ""))
}

func TestCreateRejectsBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	tests := []struct {
		name, agent, key, body string
		status                 int
		code, field            string
	}{
		{"no key", "agent-1", "", createBody, 400, idemhttp.CodeKeyMissing, ""},
		{"bad key", "agent-1", "no spaces allowed", createBody, 400, idemhttp.CodeKeyInvalid, ""},
		{"no token", "", "topup-req-0101", createBody, 401, "UNAUTHENTICATED", ""},
		{"malformed json", "agent-1", "topup-req-0102", `{"amount_cents":`, 400, "REQUEST_INVALID", ""},
		{"not an object", "agent-1", "topup-req-0103", `[1500,"wechat"]`, 400, "REQUEST_INVALID", ""},
		{"zero amount", "agent-1", "topup-req-0104", `{"amount_cents":0,"channel":"wechat"}`, 422, topup.CodeAmountInvalid, "amount_cents"},
		{"negative amount", "agent-1", "topup-req-0105", `{"amount_cents":-5,"channel":"alipay"}`, 422, topup.CodeAmountInvalid, "amount_cents"},
		{"fraction", "agent-1", "topup-req-0106", `{"amount_cents":10.5,"channel":"alipay"}`, 422, topup.CodeAmountInvalid, "amount_cents"},
		{"string amount", "agent-1", "topup-req-0107", `{"amount_cents":"1500","channel":"alipay"}`, 422, topup.CodeAmountInvalid, "amount_cents"},
		{"missing amount", "agent-1", "topup-req-0108", `{"channel":"alipay"}`, 422, topup.CodeAmountInvalid, "amount_cents"},
		{"too large", "agent-1", "topup-req-0109", `{"amount_cents":100000001,"channel":"alipay"}`, 422, topup.CodeAmountInvalid, "amount_cents"},
		{"unknown channel", "agent-1", "topup-req-0110", `{"amount_cents":1500,"channel":"paypal"}`, 422, topup.CodeChannelInvalid, "channel"},
		{"missing channel", "agent-1", "topup-req-0111", `{"amount_cents":1500}`, 422, topup.CodeChannelInvalid, "channel"},
		{"channel case", "agent-1", "topup-req-0112", `{"amount_cents":1500,"channel":"WeChat"}`, 422, topup.CodeChannelInvalid, "channel"},
	}
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				r := e.create(t, tt.agent, tt.key, tt.body)
				require.Equal(t, tt.status, r.Status, "body %q: %s", tt.body, r.Body)
				eb := r.Error
				require.Equal(t, tt.code, eb.Code, "body %q", tt.body)
				require.NotEmpty(t, eb.Message)
				require.NotEmpty(t, eb.RequestID)
				if tt.field != "" {
					require.Len(t, eb.Details, 1, "body %q", tt.body)
					require.Equal(t, tt.field, eb.Details[0].Field)
				}
			})
		}
	})
	require.Zero(t, e.count(t, "ex_topup_order", ""), "rule: a rejected request writes nothing")
	require.Zero(t, e.count(t, "tb_outbox_event", ""))
}

// Fifty identical first requests at once create one order and one event,
// with a working guard and with Redis down (Postgres alone decides).
func TestConcurrentIdenticalCreates(t *testing.T) {
	t.Parallel()
	for _, redisUp := range []bool{true, false} {
		t.Run(fmt.Sprintf("redis up %v", redisUp), func(t *testing.T) {
			t.Parallel()
			o := envOpts{}
			if !redisUp {
				o.guard = downGuard(t)
			}
			e := newEnv(t, o)
			const n = 50
			res := make([]apitest.Response, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					res[i] = e.create(t, "agent-1", "topup-req-0200", createBody)
				})
			}
			close(start)
			wg.Wait()

			kinds := map[string]int{}
			var original string
			for _, r := range res {
				switch {
				case r.Status == http.StatusCreated && r.Header.Get(idemhttp.HeaderReplayed) == "":
					kinds["original"]++
					original = r.Body
				case r.Status == http.StatusCreated:
					kinds["replay"]++
				case r.Status == http.StatusConflict && r.Error.Code == idemhttp.CodeInProgress:
					kinds["in_progress"]++
				default:
					require.Fail(t, "unexpected response", "status %d body %s", r.Status, r.Body)
				}
			}
			require.Equal(t, 1, kinds["original"], "kinds %v", kinds)
			for _, r := range res {
				if r.Status == http.StatusCreated {
					require.Equal(t, original, r.Body, "rule: every replay is the original answer, byte for byte")
				}
			}
			require.Equal(t, 1, e.count(t, "ex_topup_order", ""), "kinds %v", kinds)
			require.Equal(t, 1, e.count(t, "tb_outbox_event", ""), "kinds %v", kinds)
		})
	}
}

func TestGetForeignOrderLooksMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	o := decodeOrder(t, e.create(t, "agent-1", "topup-req-0300", createBody))

	foreign := e.do(t, req{method: http.MethodGet, path: "/api/v1/topups/" + o.TopupID, agent: "agent-2"})
	missing := e.do(t, req{method: http.MethodGet, path: "/api/v1/topups/00000000-0000-4000-8000-000000000000", agent: "agent-2"})
	for _, r := range []apitest.Response{foreign, missing} {
		require.Equal(t, http.StatusNotFound, r.Status, "body %s", r.Body)
	}
	fe, me := foreign.Error, missing.Error
	require.Equal(t, topup.CodeNotFound, fe.Code)
	fe.RequestID, me.RequestID = "", ""
	require.Equal(t, me, fe, "rule: another agent's order answers exactly like a missing one")
	require.NotContains(t, foreign.Body, o.PayURL)

	unauth := e.do(t, req{method: http.MethodGet, path: "/api/v1/topups/" + o.TopupID})
	require.Equal(t, http.StatusUnauthorized, unauth.Status)
}
