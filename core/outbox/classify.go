package outbox

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Class says whether retrying a failed delivery can help.
type Class int

const (
	// ClassTransient failures (timeouts, a queue that is down) are retried
	// with backoff.
	ClassTransient Class = iota + 1
	// ClassPermanent failures (a refused payload, an unknown event type) fail the
	// event at once; retrying cannot fix them.
	ClassPermanent
)

// String returns "transient", "permanent" or "class(n)".
func (c Class) String() string {
	switch c {
	case ClassTransient:
		return "transient"
	case ClassPermanent:
		return "permanent"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

const (
	// DefaultErrorCode is the code recorded for an error that carries no
	// valid stable code of its own.
	DefaultErrorCode = "ENQUEUE_FAILED"
	// MaxErrorMessageBytes bounds last_error_message.
	MaxErrorMessageBytes = 512
	maxCodeLen           = 64
)

var codeRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// PermanentError is implemented by errors that know whether retrying can
// help. Adapters may implement it on their own error types without importing
// this package's constructors; Classify finds it with errors.As.
type PermanentError interface {
	error
	Permanent() bool
}

// CodedError is implemented by errors that carry a stable, log-safe code
// (UPPER_SNAKE_CASE) for last_error_code.
type CodedError interface {
	error
	ErrorCode() string
}

// DeliveryError is a delivery failure with a stable code and a safe message.
// Build it with Permanent or Transient.
type DeliveryError struct {
	// Code is the stable machine code, e.g. "QUEUE_UNAVAILABLE".
	Code string
	// Message is a short, safe summary; it must not contain secrets.
	Message string
	// Final is true for permanent failures.
	Final bool
}

// Permanent returns a failure that retrying cannot fix.
func Permanent(code, msg string) error { return &DeliveryError{Code: code, Message: msg, Final: true} }

// Transient returns a failure that a later attempt may not hit.
func Transient(code, msg string) error { return &DeliveryError{Code: code, Message: msg} }

// Error implements error.
func (e *DeliveryError) Error() string { return e.Code + ": " + e.Message }

// Permanent implements PermanentError.
func (e *DeliveryError) Permanent() bool { return e.Final }

// ErrorCode implements CodedError.
func (e *DeliveryError) ErrorCode() string { return e.Code }

// Classify returns ClassPermanent when err wraps a PermanentError reporting
// true, and ClassTransient otherwise: unknown failures are retried, bounded by the
// policy's MaxAttempts.
func Classify(err error) Class {
	var pe PermanentError
	if errors.As(err, &pe) && pe.Permanent() {
		return ClassPermanent
	}
	return ClassTransient
}

// IsPermanent reports whether err is a failure retrying cannot fix (it
// wraps a PermanentError reporting true, e.g. Permanent). A consumer that
// calls another service classifies that service's errors with it, instead
// of reading DeliveryError's fields.
func IsPermanent(err error) bool { return err != nil && Classify(err) == ClassPermanent }

// ErrorCode returns the stable code carried by err (via CodedError), or
// DefaultErrorCode when there is none or it is not UPPER_SNAKE_CASE of at most
// 64 bytes. It returns "" for a nil error.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var ce CodedError
	if errors.As(err, &ce) && validCode(ce.ErrorCode()) {
		return ce.ErrorCode()
	}
	return DefaultErrorCode
}

// validCode reports an UPPER_SNAKE_CASE code of at most 64 bytes.
func validCode(c string) bool { return len(c) <= maxCodeLen && codeRE.MatchString(c) }

// ErrorMessage returns the message to record for err: a DeliveryError's own
// Message, otherwise err.Error(), passed through SafeMessage. The caller must
// still redact it (core/redaction) before persisting.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var de *DeliveryError
	if errors.As(err, &de) {
		return SafeMessage(de.Message)
	}
	return SafeMessage(err.Error())
}

// SafeMessage makes msg valid UTF-8, replaces control characters with spaces
// and truncates it to at most MaxErrorMessageBytes without splitting a rune.
// It does not redact secrets.
func SafeMessage(msg string) string {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	msg = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
	if len(msg) <= MaxErrorMessageBytes {
		return msg
	}
	cut := MaxErrorMessageBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut]
}
