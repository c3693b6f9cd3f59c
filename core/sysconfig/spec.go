package sysconfig

import (
	"fmt"
	"regexp"
	"strings"
)

// KeyPattern is the accepted key format: module.group.name, exactly three
// segments of a lowercase letter followed by lowercase letters, digits or
// underscores.
const KeyPattern = `^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$`

var keyRE = regexp.MustCompile(KeyPattern)

// ValidKey reports whether key has the KeyPattern format.
func ValidKey(key string) bool { return keyRE.MatchString(key) }

// Spec declares one controlled key. A module registers its specs once at
// start-up; the registry is the only authority on what may be written.
type Spec struct {
	// Key is the stable name, module.group.name (see KeyPattern).
	Key string
	// Module owns the key and must equal the key's first segment.
	Module string
	// Type is the value type.
	Type Type
	// Description is the Chinese explanation shown to administrators.
	Description string
	// Default is the safe value in stored textual form. It must pass Parse
	// and Check, so a key is never without a valid value.
	Default string
	// Enum, when set, lists the allowed values in textual form.
	Enum []string
	// Min and Max, when set, bound an int key (inclusive).
	Min, Max *int64
	// MaxLen, when positive, bounds a string key's length in characters.
	MaxLen int
	// ValidateFunc, when set, applies a module's own rule after the built-in
	// ones. Its error message is shown to administrators as the reason (in
	// Chinese) for non-sensitive keys; for sensitive keys a generic reason is
	// shown instead, so the message may not leak the value.
	ValidateFunc func(v Value) error
	// ReadOnly keys are shown but never written through the API.
	ReadOnly bool
	// Sensitive keys are masked in views, audit records, errors and logs.
	Sensitive bool
	// UIHint picks the admin UI control; empty means DefaultUIHint(Type).
	UIHint UIHint
	// Fallback picks the value readers use when the stored one is broken.
	Fallback Fallback
}

// validate checks the spec on its own; registry-wide conflicts are checked by
// Register.
func (s Spec) validate() error {
	if !keyRE.MatchString(s.Key) {
		return regErr(s.Key, ErrInvalidKey, "key must match "+KeyPattern)
	}
	if module, _, _ := strings.Cut(s.Key, "."); s.Module != module {
		return regErr(s.Key, ErrInvalidSpec, fmt.Sprintf("module %q must equal the key's first segment %q", s.Module, module))
	}
	if !s.Type.Valid() {
		return regErr(s.Key, ErrInvalidSpec, fmt.Sprintf("type %q must be string, int, bool or json", s.Type))
	}
	if strings.TrimSpace(s.Description) == "" {
		return regErr(s.Key, ErrInvalidSpec, "description is required")
	}
	if (s.Min != nil || s.Max != nil) && s.Type != TypeInt {
		return regErr(s.Key, ErrInvalidSpec, "min and max apply only to int keys")
	}
	if s.Min != nil && s.Max != nil && *s.Min > *s.Max {
		return regErr(s.Key, ErrInvalidSpec, fmt.Sprintf("min %d is greater than max %d", *s.Min, *s.Max))
	}
	if s.MaxLen != 0 && (s.Type != TypeString || s.MaxLen < 0) {
		return regErr(s.Key, ErrInvalidSpec, "max length must be positive and applies only to string keys")
	}
	if !s.UIHint.valid() {
		return regErr(s.Key, ErrInvalidSpec, fmt.Sprintf("unknown ui hint %q", s.UIHint))
	}
	if s.UIHint == UISelect && len(s.Enum) == 0 {
		return regErr(s.Key, ErrInvalidSpec, "ui hint select needs an enum")
	}
	if s.Fallback > FallbackDefault {
		return regErr(s.Key, ErrInvalidSpec, fmt.Sprintf("unknown fallback %d", s.Fallback))
	}
	for i, e := range s.Enum {
		if _, err := s.Parse(e); err != nil {
			return regErr(s.Key, ErrInvalidSpec, fmt.Sprintf("enum entry %d does not parse as %s", i, s.Type))
		}
	}
	v, err := s.Parse(s.Default)
	if err == nil {
		err = s.Check(v)
	}
	if err != nil {
		// Say why without echoing the default: it may be a secret.
		return regErr(s.Key, ErrInvalidDefault, "default fails its own type or constraints: "+reasonOf(err))
	}
	return nil
}

// hint returns the effective UI hint.
func (s Spec) hint() UIHint {
	if s.UIHint != "" {
		return s.UIHint
	}
	return DefaultUIHint(s.Type)
}

// clone copies the slice and pointers so callers cannot mutate a registered spec.
func (s Spec) clone() Spec {
	s.Enum = append([]string(nil), s.Enum...)
	if s.Min != nil {
		m := *s.Min
		s.Min = &m
	}
	if s.Max != nil {
		m := *s.Max
		s.Max = &m
	}
	return s
}
