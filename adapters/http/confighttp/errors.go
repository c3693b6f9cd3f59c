package confighttp

import (
	"errors"
	"strconv"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/sysconfig"
)

// MapError is the httpx.ErrorMapper of the system-config errors:
//
//	sysconfig.ErrKeyNotRegistered     404 CONFIG_KEY_NOT_REGISTERED
//	sysconfig.ErrReadOnly             409 CONFIG_KEY_READONLY
//	*sysconfig.ValueError             422 CONFIG_VALUE_INVALID (detail "value")
//	*sysconfig.VersionConflictError   409 CONFIG_VERSION_CONFLICT (detail "version")
//	*sysconfig.PinnedError            409 CONFIG_KEY_PINNED (detail "key": who pins it)
//
// None is retryable as is: the caller must change the request (re-read the
// key and send its current version, or fix the value). Messages come from
// sysconfig.Message: Chinese and free of values.
func MapError(err error) (*httpx.Error, bool) {
	var ve *sysconfig.ValueError
	var vc *sysconfig.VersionConflictError
	var pe *sysconfig.PinnedError
	msg := sysconfig.Message(err)
	switch {
	case errors.As(err, &pe):
		return httpx.Conflict(sysconfig.CodeKeyPinned, msg).
			WithDetails(httpx.Detail{Field: "key", Reason: "由 " + pe.By + " 固定"}), true
	case errors.Is(err, sysconfig.ErrKeyNotRegistered):
		return httpx.NotFound(sysconfig.CodeKeyNotRegistered, msg), true
	case errors.Is(err, sysconfig.ErrReadOnly):
		return httpx.Conflict(sysconfig.CodeReadOnly, msg), true
	case errors.As(err, &ve):
		return httpx.Unprocessable(sysconfig.CodeValueInvalid, msg).
			WithDetails(httpx.Detail{Field: "value", Reason: ve.Reason}), true
	case errors.As(err, &vc):
		return httpx.Conflict(sysconfig.CodeVersionConflict, msg).
			WithDetails(httpx.Detail{Field: "version", Reason: "当前版本为 " + strconv.FormatInt(vc.Actual, 10) + "，请重新读取后使用该版本重试"}), true
	}
	return nil, false
}

var _ httpx.ErrorMapper = MapError
