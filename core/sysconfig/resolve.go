package sysconfig

import "fmt"

// Source says where a resolved value came from.
type Source string

// Resolution sources.
const (
	SourceStored       Source = "stored"
	SourceLastVerified Source = "last_verified"
	SourceDefault      Source = "default"
)

// Alert codes raised by Resolve and ResolveUnavailable.
const (
	CodeStoredValueInvalid = "CONFIG_STORED_VALUE_INVALID"
	CodeReadFailed         = "CONFIG_READ_FAILED"
)

// Alert is an operator alert about a key whose stored value was not used.
// Message is Chinese and never contains the value.
type Alert struct {
	Key     string
	Code    string
	Message string
}

// Resolution is the value a reader should use and why.
type Resolution struct {
	Value  Value
	Source Source
	// Alert is set whenever a fallback replaced a broken stored value.
	Alert *Alert
}

// Resolve picks the value readers use. A missing row (stored nil) quietly
// yields the registered default. A stored value that does not parse, has a
// different value_type, or fails the key's constraints is never used: the
// spec's Fallback picks lastVerified (when it is for this key and type) or
// the default, with an Alert. When Source is SourceStored the caller should
// remember Value as its new last verified value.
//
// spec must be registered (its default valid); otherwise the default
// resolves to the zero Value.
func Resolve(spec Spec, stored *Stored, lastVerified *Value) Resolution {
	if stored == nil {
		return Resolution{Value: spec.defaultValue(), Source: SourceDefault}
	}
	reason := "数据库中的值类型与注册类型不一致"
	if stored.Type == "" || stored.Type == spec.Type {
		v, err := spec.Parse(stored.Value)
		if err == nil {
			err = spec.Check(v)
		}
		if err == nil {
			return Resolution{Value: v, Source: SourceStored}
		}
		reason = reasonOf(err)
	}
	return spec.fallback(lastVerified, CodeStoredValueInvalid, "数据库中的值无效（"+reason+"）")
}

// ResolveUnavailable is Resolve for a read that failed (database down,
// timeout): the spec's Fallback applies and an alert is raised.
func ResolveUnavailable(spec Spec, lastVerified *Value) Resolution {
	return spec.fallback(lastVerified, CodeReadFailed, "读取配置失败")
}

func (s Spec) fallback(lastVerified *Value, code, problem string) Resolution {
	r := Resolution{Value: s.defaultValue(), Source: SourceDefault}
	usable := lastVerified != nil && lastVerified.key == s.Key && lastVerified.typ == s.Type
	if s.Fallback == FallbackLastVerified && usable {
		r = Resolution{Value: *lastVerified, Source: SourceLastVerified}
	}
	used := "代码默认值"
	if r.Source == SourceLastVerified {
		used = "最后一次验证通过的值"
	}
	r.Alert = &Alert{
		Key:  s.Key,
		Code: code,
		Message: fmt.Sprintf("配置 %s %s，已改用%s；请检查数据库中该配置并通过配置接口修正",
			s.Key, problem, used),
	}
	return r
}

func (s Spec) defaultValue() Value {
	v, err := s.Parse(s.Default)
	if err != nil {
		return Value{}
	}
	return v
}
