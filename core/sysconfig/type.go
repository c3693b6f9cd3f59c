package sysconfig

// Type is the value type of a key, stored in tb_system_config.value_type.
type Type string

// The four value types tb_system_config.value_type allows; the column's
// values are a public contract.
const (
	TypeString Type = "string" // any text; Spec.MaxLen bounds its length in characters
	TypeInt    Type = "int"    // a base-10 int64; Spec.Min and Spec.Max bound it
	TypeBool   Type = "bool"   // "true" or "false"
	TypeJSON   Type = "json"   // any JSON value except null, stored compacted
)

// Valid reports whether t is one of the four value types.
func (t Type) Valid() bool {
	switch t {
	case TypeString, TypeInt, TypeBool, TypeJSON:
		return true
	}
	return false
}

// UIHint tells the admin UI which control edits a key.
type UIHint string

// The supported controls. An empty hint means the type's default
// (see DefaultUIHint).
const (
	UISwitch   UIHint = "switch"
	UINumber   UIHint = "number"
	UISelect   UIHint = "select" // requires Spec.Enum
	UIText     UIHint = "text"
	UITextarea UIHint = "textarea"
	UIJSON     UIHint = "json"
)

// DefaultUIHint is the control used for a type when Spec.UIHint is empty.
func DefaultUIHint(t Type) UIHint {
	switch t {
	case TypeBool:
		return UISwitch
	case TypeInt:
		return UINumber
	case TypeJSON:
		return UIJSON
	}
	return UIText
}

func (h UIHint) valid() bool {
	switch h {
	case "", UISwitch, UINumber, UISelect, UIText, UITextarea, UIJSON:
		return true
	}
	return false
}

// Fallback is what a reader uses when the stored value of a key cannot be
// used (unparsable, out of range, or unreadable).
type Fallback uint8

const (
	// FallbackLastVerified uses the last value that passed validation, or the
	// registered default when there is none. It is the zero value.
	FallbackLastVerified Fallback = iota
	// FallbackDefault always uses the registered default.
	FallbackDefault
)
