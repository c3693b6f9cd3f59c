package devices

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/july/template/adapters/http/httpx"
)

// Stable machine codes of the HTTP API.
const (
	CodeFileMissing    = "DEVICE_FILE_MISSING"
	CodeFileTooLarge   = "DEVICE_FILE_TOO_LARGE"
	CodeTaskNotFound   = "DEVICE_TASK_NOT_FOUND"
	CodeNotCancellable = "TASK_NOT_CANCELLABLE"
	CodeFileNoRows     = "DEVICE_FILE_NO_ROWS"
	// CodeFileNameInvalid: the file name carries a control or format
	// character (NUL, ESC, CR/LF, DEL, C1, bidi overrides).
	CodeFileNameInvalid = "DEVICE_FILE_NAME_INVALID"
	// CodeFileTooManyRows: the file has more data rows than KeyMaxRows.
	CodeFileTooManyRows = "DEVICE_FILE_TOO_MANY_ROWS"
	// CodeUploadRateLimited: the caller started KeyUploadsPerMinute
	// uploads in the last 60 seconds.
	CodeUploadRateLimited = "DEVICE_UPLOAD_RATE_LIMITED"
)

var (
	// ErrTaskNotFound is returned when no task has the id for the caller:
	// a missing task and another caller's task are the same answer, so
	// ids cannot be probed.
	ErrTaskNotFound = errors.New("device assignment task not found")
	// ErrNotCancellable is returned when cancelling a finished task.
	ErrNotCancellable = errors.New("device assignment task is finished and cannot be cancelled")
)

// TooManyRowsError is returned by Upload for a file with more data rows
// than the configured KeyMaxRows.
type TooManyRowsError struct{ Rows, Max int64 }

func (e *TooManyRowsError) Error() string {
	return fmt.Sprintf("device csv has %d data rows, more than %d", e.Rows, e.Max)
}

// RateLimitedError is returned by Upload when the actor started the
// configured KeyUploadsPerMinute uploads within the last minute;
// RetryAfter is when the oldest of them leaves the window.
type RateLimitedError struct {
	Max        int64
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("more than %d device assignment uploads per minute; retry after %s", e.Max, e.RetryAfter)
}

var (
	errFileMissing = httpx.BadRequest(CodeFileMissing,
		"缺少上传文件：请以 multipart/form-data 上传非空 CSV 文件，字段名为 file")
	errFileTooLarge = httpx.NewError(http.StatusRequestEntityTooLarge, CodeFileTooLarge,
		"文件过大：CSV 文件不能超过 2 MiB，请拆分后分批上传", false)
	errTaskNotFound = httpx.NotFound(CodeTaskNotFound,
		"分配任务不存在：请检查 task_id 是否正确")
	errNotCancellable = httpx.Conflict(CodeNotCancellable,
		"任务已结束，无法取消：请刷新任务状态")
	errForbidden = httpx.Forbidden(httpx.CodeForbidden,
		"当前账号无权使用设备分配：需要设备代理商（devices.agent）或设备管理员（devices.admin）角色，请联系管理员授权")
	errFileNameInvalid = httpx.BadRequest(CodeFileNameInvalid,
		"文件名包含控制字符（如 NUL、换行、ESC 或方向控制符）：请重命名文件后重新上传")
)

// MapError is the httpx.ErrorMapper of this domain: ErrForbidden is 403
// FORBIDDEN (the code auth.RequireRole answers), ErrTaskNotFound 404
// DEVICE_TASK_NOT_FOUND, ErrNotCancellable 409 TASK_NOT_CANCELLABLE,
// *TooManyRowsError 422 DEVICE_FILE_TOO_MANY_ROWS and *RateLimitedError
// 429 DEVICE_UPLOAD_RATE_LIMITED with Retry-After.
func MapError(err error) (*httpx.Error, bool) {
	switch {
	case errors.Is(err, ErrForbidden):
		return errForbidden.WithCause(err), true
	case errors.Is(err, ErrTaskNotFound):
		return errTaskNotFound.WithCause(err), true
	case errors.Is(err, ErrNotCancellable):
		return errNotCancellable.WithCause(err), true
	}
	var rows *TooManyRowsError
	if errors.As(err, &rows) {
		return httpx.Unprocessable(CodeFileTooManyRows, fmt.Sprintf(
			"文件数据行过多：每个文件最多 %d 行数据（本文件 %d 行），请拆分后分批上传", rows.Max, rows.Rows)).WithCause(err), true
	}
	var rate *RateLimitedError
	if errors.As(err, &rate) {
		e := rateRefusal(rate.Max).WithCause(err)
		e.RetryAfter = rate.RetryAfter
		return e, true
	}
	return nil, false
}

// rateRefusal is the 429 of KeyUploadsPerMinute, from the early count
// (ratehttp) or the exact one in Postgres (Upload).
func rateRefusal(max int64) *httpx.Error {
	return httpx.TooManyRequests(CodeUploadRateLimited, fmt.Sprintf(
		"上传过于频繁：每分钟最多发起 %d 次设备分配上传，请在 Retry-After 指定的秒数后重试", max))
}
