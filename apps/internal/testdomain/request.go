package testdomain

import (
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/july/template/adapters/http/httpx"
)

// Bounds of a create request.
const (
	MaxAmount  = 1_000_000
	MaxNoteLen = 200 // characters
)

// Codes of this domain's errors.
const (
	CodeAmountInvalid  = "TD_AMOUNT_INVALID"
	CodeNoteInvalid    = "TD_NOTE_INVALID"
	CodeNotFound       = "TD_NOT_FOUND"
	CodePayloadInvalid = "TD_PAYLOAD_INVALID"
)

// CreateRequest is the body of POST RouteOrders; unknown fields are
// ignored (and left out of the fingerprint).
type CreateRequest struct {
	Amount int64  `json:"amount"`
	Note   string `json:"note"`
}

// ValidationError is a field the caller must fix (422).
type ValidationError struct{ Code, Field, Reason string }

func (e *ValidationError) Error() string { return "testdomain: invalid " + e.Field + ": " + e.Reason }

var errBodyInvalid = httpx.BadRequest(httpx.CodeRequestInvalid, `请求体须为 JSON 对象，例如 {"amount":100,"note":"测试"}`)

// parseCreate decodes body: not a JSON object is 400, a bad field 422.
// The amount is an exact integer however it is spelled (100, 1e2, 100.0).
func parseCreate(body []byte) (CreateRequest, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return CreateRequest{}, errBodyInvalid.WithCause(errors.New("testdomain: body is not a json object"))
	}
	var req CreateRequest
	n, ok := httpx.ExactInt(raw["amount"]) // at most httpx.MaxNumberLen bytes
	if !ok || n < 1 || n > MaxAmount {
		return req, &ValidationError{Code: CodeAmountInvalid, Field: "amount", Reason: "须为 1 到 1000000 之间的整数"}
	}
	req.Amount = n
	if note, ok := raw["note"]; ok && json.Unmarshal(note, &req.Note) != nil || utf8.RuneCountInString(req.Note) > MaxNoteLen {
		return req, &ValidationError{Code: CodeNoteInvalid, Field: "note", Reason: "须为不超过 200 个字符的字符串"}
	}
	return req, nil
}

var (
	errNotFoundHTTP  = httpx.NotFound(CodeNotFound, "测试订单不存在：请检查订单号；只能查询自己创建的订单")
	errForbiddenHTTP = httpx.Forbidden(httpx.CodeForbidden, "当前账号无权执行此操作：创建测试订单需要 td_writer 角色")
)

// MapError renders the domain's errors: *ValidationError 422 with its
// field, ErrForbidden 403, ErrNotFound 404.
func MapError(err error) (*httpx.Error, bool) {
	var ve *ValidationError
	switch {
	case errors.As(err, &ve):
		return httpx.Unprocessable(ve.Code, "请求字段不正确："+ve.Field+ve.Reason).WithCause(err).
			WithDetails(httpx.Detail{Field: ve.Field, Reason: ve.Reason}), true
	case errors.Is(err, ErrForbidden):
		return errForbiddenHTTP.WithCause(err), true
	case errors.Is(err, ErrNotFound):
		return errNotFoundHTTP.WithCause(err), true
	}
	return nil, false
}
