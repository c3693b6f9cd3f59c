package devices

import (
	"errors"
	"net/http"

	"github.com/july/template/adapters/http/httpx"
)

// Stable machine codes of the HTTP API.
const (
	CodeFileMissing    = "DEVICE_FILE_MISSING"
	CodeFileTooLarge   = "DEVICE_FILE_TOO_LARGE"
	CodeTaskNotFound   = "DEVICE_TASK_NOT_FOUND"
	CodeNotCancellable = "TASK_NOT_CANCELLABLE"
	CodeFileNoRows     = "DEVICE_FILE_NO_ROWS"
)

var (
	// ErrTaskNotFound is returned when no task has the id for the caller:
	// a missing task and another caller's task are the same answer, so
	// ids cannot be probed.
	ErrTaskNotFound = errors.New("device assignment task not found")
	// ErrNotCancellable is returned when cancelling a finished task.
	ErrNotCancellable = errors.New("device assignment task is finished and cannot be cancelled")
)

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
		"当前账号无权使用设备分配：需要代理商（agent）或管理员（admin）角色，请联系管理员授权")
)

// MapError is the httpx.ErrorMapper of this domain: ErrForbidden is 403
// FORBIDDEN (the code auth.RequireRole answers), ErrTaskNotFound 404
// DEVICE_TASK_NOT_FOUND and ErrNotCancellable 409 TASK_NOT_CANCELLABLE.
func MapError(err error) (*httpx.Error, bool) {
	switch {
	case errors.Is(err, ErrForbidden):
		return errForbidden.WithCause(err), true
	case errors.Is(err, ErrTaskNotFound):
		return errTaskNotFound.WithCause(err), true
	case errors.Is(err, ErrNotCancellable):
		return errNotCancellable.WithCause(err), true
	}
	return nil, false
}
