package idemhttp

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/idempotency"
)

// Stable machine codes this package emits.
const (
	CodeKeyMissing = "IDEMPOTENCY_KEY_MISSING"
	CodeKeyInvalid = "IDEMPOTENCY_KEY_INVALID"
	CodeKeyReused  = "IDEMPOTENCY_KEY_REUSED"
	CodeInProgress = "IDEMPOTENCY_IN_PROGRESS"
)

// keyFormatZH is idempotency.KeyFormat for Chinese messages.
var keyFormatZH = "长度 " + strconv.Itoa(idempotency.KeyMinLen) + "-" + strconv.Itoa(idempotency.KeyMaxLen) +
	" 个字符，仅限 A-Z a-z 0-9 . _ : -"

var (
	errKeyMissing = httpx.BadRequest(CodeKeyMissing,
		"缺少幂等键：创建请求必须在请求头 Idempotency-Key（或服务允许时的 X-Request-ID）中携带本次请求的唯一标识，"+keyFormatZH)
	errKeyInvalid = httpx.BadRequest(CodeKeyInvalid,
		"幂等键格式不正确：X-Request-ID（或 Idempotency-Key）须"+keyFormatZH+"，请修正后重试")
	errKeyReused = httpx.Unprocessable(CodeKeyReused,
		"同一幂等键已用于不同的请求内容，请使用新的 X-Request-ID")
	errInProgress = httpx.NewError(http.StatusConflict, CodeInProgress,
		"相同幂等键的请求正在处理中：请稍后使用相同的 X-Request-ID 重试", true)
	errBodyInvalid = httpx.BadRequest(httpx.CodeRequestInvalid,
		"请求体不是合法的 JSON：请检查语法和编码（UTF-8）后重试")
	errMultipartInvalid = httpx.BadRequest(httpx.CodeRequestInvalid,
		"请求体不是合法的 multipart/form-data：请检查 Content-Type 的 boundary 参数和分段格式后重试")
)

// errNoCapture means the server was wired without CaptureKey.
var errNoCapture = errors.New("idemhttp: CaptureKey is not installed: add e.Pre(idemhttp.CaptureKey())")

// MapError is the httpx.ErrorMapper for idempotency errors returned by
// handlers and stores: ErrKeyReused is 422 IDEMPOTENCY_KEY_REUSED (not
// retryable), ErrInProgress 409 IDEMPOTENCY_IN_PROGRESS (retryable),
// ErrKeyMissing 400 IDEMPOTENCY_KEY_MISSING and ErrKeyMalformed 400
// IDEMPOTENCY_KEY_INVALID. Register it with httpx.NewServer.
func MapError(err error) (*httpx.Error, bool) {
	switch {
	case errors.Is(err, idempotency.ErrKeyReused):
		return errKeyReused.WithCause(err), true
	case errors.Is(err, idempotency.ErrInProgress):
		return errInProgress.WithCause(err), true
	case errors.Is(err, idempotency.ErrKeyMissing):
		return errKeyMissing.WithCause(err), true
	case errors.Is(err, idempotency.ErrKeyMalformed):
		return errKeyInvalid.WithCause(err), true
	}
	return nil, false
}

// keyDetail explains a rejected key without echoing it (it is untrusted).
func keyDetail(header string, err error) httpx.Detail {
	var kfe *idempotency.KeyFormatError
	if !errors.As(err, &kfe) {
		return httpx.Detail{Field: header, Reason: "格式不正确"}
	}
	switch {
	case kfe.Pos >= 0:
		return httpx.Detail{Field: header, Reason: "第 " + strconv.Itoa(kfe.Pos+1) + " 个字节不在允许的字符集中"}
	case kfe.Len < idempotency.KeyMinLen:
		return httpx.Detail{Field: header, Reason: "长度 " + strconv.Itoa(kfe.Len) + " 过短"}
	}
	return httpx.Detail{Field: header, Reason: "长度 " + strconv.Itoa(kfe.Len) + " 过长"}
}
