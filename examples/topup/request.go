package topup

import (
	"encoding/json"
	"errors"

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
// *ValidationError (422). Unknown fields are ignored. amount_cents is an
// exact integer however it is spelled (1000, 1e3, 1000.0), never read
// through float64, and at most httpx.MaxNumberLen bytes long: the parse
// costs the same for every body.
func parseCreate(body []byte) (CreateRequest, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return CreateRequest{}, errBodyInvalid.WithCause(errors.New("topup: body is not a json object"))
	}
	var req CreateRequest
	amount, ok := raw["amount_cents"]
	if ok {
		req.AmountCents, ok = httpx.ExactInt(amount) // bounded: httpx.MaxNumberLen bytes
	}
	if !ok || req.AmountCents <= 0 || req.AmountCents > MaxAmountCents {
		return req, &ValidationError{Code: CodeAmountInvalid, Field: "amount_cents", Reason: "须为 1 到 100000000 之间的整数（分）"}
	}
	var ch string
	if err := json.Unmarshal(raw["channel"], &ch); err != nil || (Channel(ch) != ChannelWeChat && Channel(ch) != ChannelAlipay) {
		return req, &ValidationError{Code: CodeChannelInvalid, Field: "channel", Reason: "须为 wechat 或 alipay"}
	}
	req.Channel = Channel(ch)
	return req, nil
}
