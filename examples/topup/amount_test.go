package topup_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/examples/topup"
)

// REGRESSION: amount_cents was decoded through float64, so a
// fraction beyond float precision (0.99999999999999999 is 1.0 as a
// float64) was rounded and accepted. Integers are now parsed exactly.
func TestCreateParsesAmountExactly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	for i, amount := range []string{
		"0.99999999999999999", "1500.0000000000000001", "1499.99999999999999999", "99999999.999999999999",
		"1.0000000000000000000000000000001e3", "15e-1", "1e20", "-0.0", "1E-300",
	} {
		r := e.create(t, "agent-1", "topup-amount-"+string(rune('a'+i)), `{"amount_cents":`+amount+`,"channel":"wechat"}`)
		require.Equal(t, 422, r.Status, "amount %s: %s", amount, r.Body)
		require.Equal(t, topup.CodeAmountInvalid, r.Error.Code, "amount %s", amount)
		require.Contains(t, r.Error.Message, "整数", "amount %s: a Chinese message saying what to send", amount)
	}
	require.Zero(t, e.count(t, "ex_topup_order", ""), "rule: a rejected amount writes nothing")

	// Exact integers in any JSON spelling are still accepted.
	for i, amount := range []string{"1500", "1.5e3", "1500.000", "15E2"} {
		r := e.create(t, "agent-1", "topup-amount-ok-"+string(rune('a'+i)), `{"amount_cents":`+amount+`,"channel":"wechat"}`)
		require.Equal(t, 201, r.Status, "amount %s: %s", amount, r.Body)
	}
	require.Equal(t, 4, e.count(t, "ex_topup_order", "amount_cents = 1500"))
}
