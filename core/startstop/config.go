package startstop

import (
	"cmp"
	"fmt"
)

// ConfigError is the error every service-floor constructor returns for a
// setting it refuses: which field of which config, the value given, and
// what to set instead. Match it with errors.As.
type ConfigError struct {
	// Pkg is the package of the refusing constructor, e.g. "sweep".
	Pkg string
	// Config is the config type, e.g. "TaskRecoveryConfig"; empty when
	// Field names a constructor argument.
	Config string
	// Field is the refused field or argument, e.g. "Every".
	Field string
	// Value is the value given (after defaults were applied).
	Value any
	// Want says what to set instead, e.g. "within 1s..1h".
	Want string
}

func (e *ConfigError) Error() string {
	field := e.Field
	if e.Config != "" {
		field = e.Config + "." + e.Field
	}
	if e.Value == nil {
		return fmt.Sprintf("%s: %s: %s", e.Pkg, field, e.Want)
	}
	return fmt.Sprintf("%s: %s %v: %s", e.Pkg, field, e.Value, e.Want)
}

// CheckRange returns a *ConfigError when v is outside lo..hi, else nil.
func CheckRange[T cmp.Ordered](pkg, config, field string, v, lo, hi T) error {
	if v < lo || v > hi {
		return &ConfigError{Pkg: pkg, Config: config, Field: field, Value: v, Want: fmt.Sprintf("set it within %v..%v", lo, hi)}
	}
	return nil
}
