package topup

import (
	"errors"

	"github.com/july/template/adapters/http/httpx"
)

// Stable machine codes of this domain.
const (
	CodeAmountInvalid  = "TOPUP_AMOUNT_INVALID"
	CodeChannelInvalid = "TOPUP_CHANNEL_INVALID"
	CodeNotFound       = "TOPUP_NOT_FOUND"
	// CodeRateLimited: the agent sent more than KeyCreatesPerMinute
	// creates this minute (429, Retry-After).
	CodeRateLimited = "TOPUP_CREATE_RATE_LIMITED"
	// CodePayloadInvalid is the permanent consumer error for an event whose
	// payload does not match its order.
	CodePayloadInvalid = "TOPUP_PAYLOAD_INVALID"
)

// ErrNotFound is returned when an order does not exist or, for an agent,
// belongs to another agent; both answer the same 404, so ids of others
// are not probed.
var ErrNotFound = errors.New("topup order not found")

// ValidationError reports a request field the caller must fix.
type ValidationError struct {
	Code   string // CodeAmountInvalid or CodeChannelInvalid
	Field  string // the JSON field
	Reason string // Chinese, what to send instead
	// Message is the Chinese headline of the 422; empty: the field's
	// general one (what a valid value looks like). A rule with its own
	// cause (the configured limit) says that cause instead.
	Message string
}

// Error implements error.
func (e *ValidationError) Error() string { return "topup: invalid " + e.Field + ": " + e.Code }

var (
	errNotFoundHTTP  = httpx.NotFound(CodeNotFound, "充值订单不存在：请检查订单号；只能查询自己创建的订单")
	errForbiddenHTTP = httpx.Forbidden(httpx.CodeForbidden,
		"当前账号无权执行此操作：充值和钱包需要代理商（topup.agent）角色，查询他人的订单需要充值管理员（topup.admin）角色，请联系管理员授权")
)

// MapError is the httpx.ErrorMapper of this domain: *ValidationError is 422
// with its code, message and field, ErrForbidden 403 FORBIDDEN (the code
// auth.RequireRole answers), ErrNotFound 404 TOPUP_NOT_FOUND.
func MapError(err error) (*httpx.Error, bool) {
	var ve *ValidationError
	switch {
	case errors.As(err, &ve):
		msg := ve.Message
		switch {
		case msg != "":
		case ve.Code == CodeChannelInvalid:
			msg = "支付渠道不正确：channel 须为 wechat 或 alipay"
		default:
			msg = "充值金额不正确：amount_cents 须为 1 到 100000000 之间的整数（单位：分）"
		}
		return httpx.Unprocessable(ve.Code, msg).WithCause(err).
			WithDetails(httpx.Detail{Field: ve.Field, Reason: ve.Reason}), true
	case errors.Is(err, ErrForbidden):
		return errForbiddenHTTP.WithCause(err), true
	case errors.Is(err, ErrNotFound):
		return errNotFoundHTTP.WithCause(err), true
	}
	return nil, false
}
