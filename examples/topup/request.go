package topup

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strings"

	"github.com/july/template/adapters/http/httpx"
)

// MaxAmountCents bounds one top-up (1,000,000.00 yuan): a larger amount is
// a client bug, and the bound keeps balance sums far from overflow.
const MaxAmountCents = 100_000_000

// CreateRequest is the body of POST /api/v1/topups.
type CreateRequest struct {
	AmountCents int64   `json:"amount_cents"`
	Channel     Channel `json:"channel"`
}

var errBodyInvalid = httpx.BadRequest(httpx.CodeRequestInvalid,
	`请求体须为 JSON 对象，例如 {"amount_cents":1000,"channel":"wechat"}`)

// parseCreate decodes and validates body. Malformed JSON or a body that is
// not an object is a 400 *httpx.Error; a missing or wrong field is a
// *ValidationError (422). Unknown fields are ignored.
func parseCreate(body []byte) (CreateRequest, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return CreateRequest{}, errBodyInvalid.WithCause(errors.New("topup: body is not a json object"))
	}
	var req CreateRequest
	amount, ok := raw["amount_cents"]
	if !ok || !intJSON(amount, &req.AmountCents) || req.AmountCents <= 0 || req.AmountCents > MaxAmountCents {
		return req, &ValidationError{Code: CodeAmountInvalid, Field: "amount_cents", Reason: "须为 1 到 100000000 之间的整数（分）"}
	}
	var ch string
	if err := json.Unmarshal(raw["channel"], &ch); err != nil || (Channel(ch) != ChannelWeChat && Channel(ch) != ChannelAlipay) {
		return req, &ValidationError{Code: CodeChannelInvalid, Field: "channel", Reason: "须为 wechat 或 alipay"}
	}
	req.Channel = Channel(ch)
	return req, nil
}

// intJSON decodes a JSON number whose exact value is an integer (1000,
// 1e3, 1000.0) into *n; strings, fractions and out-of-range numbers fail.
// The number is parsed as an exact decimal, never through float64: a
// fraction beyond float precision (0.99999999999999999) is a fraction,
// not 1.
func intJSON(b json.RawMessage, n *int64) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return false // json.Number would also accept a quoted "1000"
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var num json.Number
	if err := d.Decode(&num); err != nil || d.More() {
		return false
	}
	if v, err := num.Int64(); err == nil {
		*n = v
		return true
	}
	// An exponent beyond 3 digits is out of range either way, and would
	// make the exact value expensive to build.
	if i := strings.IndexAny(string(num), "eE"); i >= 0 && len(strings.TrimLeft(string(num[i+1:]), "+-")) > 3 {
		return false
	}
	r, ok := new(big.Rat).SetString(string(num))
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return false
	}
	*n = r.Num().Int64()
	return true
}
