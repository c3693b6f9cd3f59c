package sysconfig

import (
	"encoding/json"
	"time"
)

// Stored is one tb_system_config row as the adapter reads it.
type Stored struct {
	Key         string    // config_key
	Value       string    // config_value, textual form
	Type        Type      // value_type
	Module      string    // module
	Description string    // description
	ReadOnly    bool      // readonly
	Version     int64     // version; 0 means no row yet
	UpdatedAt   time.Time // updated_at
	UpdatedBy   string    // updated_by
}

// Constraints is a key's value range as the admin UI needs it.
type Constraints struct {
	Enum   []string `json:"enum,omitempty"`
	Min    *int64   `json:"min,omitempty"`
	Max    *int64   `json:"max,omitempty"`
	MaxLen int      `json:"max_len,omitempty"`
}

// View is one key as the API returns it. Value is JSON of the key's type
// (a string, number, bool or the JSON value), or the JSON string Mask when
// the key is sensitive or unregistered. A stored text that does not parse
// is shown as a JSON string so it can be diagnosed.
type View struct {
	Key         string          `json:"key"`
	Module      string          `json:"module"`
	Value       json.RawMessage `json:"value"`
	ValueType   Type            `json:"value_type"`
	Description string          `json:"description"`
	ReadOnly    bool            `json:"readonly"`
	Sensitive   bool            `json:"sensitive"`
	Registered  bool            `json:"registered"`
	UIHint      UIHint          `json:"ui_hint"`
	Constraints Constraints     `json:"constraints"`
	Version     int64           `json:"version"`
	UpdatedAt   *time.Time      `json:"updated_at"` // null when no row yet
	UpdatedBy   string          `json:"updated_by"`
	// PinnedBy names the running processes that take the key from their
	// environment instead (see Pin); omitted when none does.
	PinnedBy string `json:"pinned_by,omitempty"`
}

// ViewOf renders a key for the API. spec is nil for a stored key no module
// registered: it is shown read-only, registered=false and with its value
// masked, since its sensitivity is unknown. stored is nil when a registered
// key has no row yet: its default is shown at version 0. With both nil the
// zero View is returned.
func ViewOf(spec *Spec, stored *Stored) View {
	switch {
	case spec == nil && stored == nil:
		return View{}
	case spec == nil:
		v := View{
			Key: stored.Key, Module: stored.Module, ValueType: stored.Type,
			Description: stored.Description, ReadOnly: true, Sensitive: true,
			Value: maskJSON(),
		}
		v.setRow(stored)
		return v
	}
	v := View{
		Key: spec.Key, Module: spec.Module, ValueType: spec.Type,
		Description: spec.Description, ReadOnly: spec.ReadOnly,
		Sensitive: spec.Sensitive, Registered: true, UIHint: spec.hint(),
	}
	c := spec.clone() // the view must not alias the caller's spec
	v.Constraints = Constraints{Enum: c.Enum, Min: c.Min, Max: c.Max, MaxLen: c.MaxLen}
	if spec.Sensitive {
		v.Constraints.Enum = nil // the allowed values of a secret are as secret as the value
	}
	text := spec.Default
	if stored != nil {
		text = stored.Value
		v.ReadOnly = v.ReadOnly || stored.ReadOnly
		v.setRow(stored)
	}
	switch parsed, err := spec.Parse(text); {
	case spec.Sensitive:
		v.Value = maskJSON()
	case err != nil:
		v.Value, _ = json.Marshal(text) // a string always marshals
	default:
		v.Value = parsed.JSONValue()
	}
	return v
}

func (v *View) setRow(s *Stored) {
	v.Version, v.UpdatedBy = s.Version, s.UpdatedBy
	if !s.UpdatedAt.IsZero() {
		at := s.UpdatedAt
		v.UpdatedAt = &at
	}
}

func maskJSON() json.RawMessage { return json.RawMessage(`"` + Mask + `"`) }
