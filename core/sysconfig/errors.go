package sysconfig

import (
	"errors"
	"fmt"
)

// Stable machine codes for the HTTP error envelope and audit records.
const (
	CodeKeyNotRegistered = "CONFIG_KEY_NOT_REGISTERED" // 404
	CodeReadOnly         = "CONFIG_KEY_READONLY"       // 409
	CodeValueInvalid     = "CONFIG_VALUE_INVALID"      // 422
	CodeVersionConflict  = "CONFIG_VERSION_CONFLICT"   // 409
)

var (
	// ErrKeyNotRegistered is returned for a key no module registered.
	ErrKeyNotRegistered = errors.New("config key not registered: only keys registered in code can be written")
	// ErrReadOnly is returned when writing a read-only key.
	ErrReadOnly = errors.New("config key is read-only: change it through a migration or code release")
)

// Registration failure kinds, matched with errors.Is on a *RegistrationError.
var (
	ErrDuplicateKey   = errors.New("duplicate config key")
	ErrTypeClash      = errors.New("config key registered with two types")
	ErrInvalidKey     = errors.New("invalid config key format")
	ErrInvalidDefault = errors.New("invalid config default")
	ErrInvalidSpec    = errors.New("invalid config spec")
)

// RegistrationError is returned by Registry.Register when a spec is rejected.
// Err is one of the ErrDuplicateKey family.
type RegistrationError struct {
	Key    string
	Reason string
	Err    error
}

func regErr(key string, kind error, reason string) *RegistrationError {
	return &RegistrationError{Key: key, Reason: reason, Err: kind}
}

// Error implements error.
func (e *RegistrationError) Error() string {
	return fmt.Sprintf("register config key %q: %v: %s; fix the spec before start-up", e.Key, e.Err, e.Reason)
}

// Unwrap returns the failure kind.
func (e *RegistrationError) Unwrap() error { return e.Err }

// ValueError is returned when a value does not match its key's type or
// constraints (422 CONFIG_VALUE_INVALID). Reason is Chinese, safe to show
// to administrators, and never contains a sensitive value.
type ValueError struct {
	Key    string
	Reason string
}

// Error implements error.
func (e *ValueError) Error() string {
	return fmt.Sprintf("invalid value for config key %q: %s; send a value matching the key's type and constraints", e.Key, e.Reason)
}

// VersionConflictError is returned when the caller's expected version is not
// the current one (409 CONFIG_VERSION_CONFLICT).
type VersionConflictError struct {
	Key      string
	Expected int64
	Actual   int64
}

// Error implements error.
func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("config key %q version conflict: expected %d, current %d; reload the key and retry", e.Key, e.Expected, e.Actual)
}

// Code returns the stable machine code for an update error, or "" when err
// is nil or not one of this package's update errors.
func Code(err error) string {
	var ve *ValueError
	var vc *VersionConflictError
	var pe *PinnedError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return CodeKeyPinned
	case errors.Is(err, ErrKeyNotRegistered):
		return CodeKeyNotRegistered
	case errors.Is(err, ErrReadOnly):
		return CodeReadOnly
	case errors.As(err, &ve):
		return CodeValueInvalid
	case errors.As(err, &vc):
		return CodeVersionConflict
	}
	return ""
}

// Message returns a Chinese, actionable message for an update error that is
// safe to show (it never carries a value), or "" when Code(err) is "".
func Message(err error) string {
	var ve *ValueError
	var vc *VersionConflictError
	var pe *PinnedError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return "配置项已被运行中的进程通过 " + pe.By + " 固定，修改不会生效；请先移除该环境变量并重启对应进程，再修改"
	case errors.Is(err, ErrKeyNotRegistered):
		return "配置项未注册，不能通过接口修改"
	case errors.Is(err, ErrReadOnly):
		return "配置项为只读，不能通过接口修改"
	case errors.As(err, &ve):
		return "配置值不合法：" + ve.Reason
	case errors.As(err, &vc):
		return fmt.Sprintf("配置已被修改（当前版本 %d），请刷新后基于最新版本重试", vc.Actual)
	}
	return ""
}

// reasonOf returns the safe reason of a ValueError, or a generic one.
func reasonOf(err error) string {
	var ve *ValueError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	return "值不合法"
}
