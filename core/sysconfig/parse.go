package sysconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parse turns stored text into a typed Value. It checks the type only; use
// Check for the key's constraints. Ints are base-10 int64 ("+5" and "05"
// are accepted and canonicalised), bools are exactly "true" or "false",
// json is any valid JSON except null.
func (s Spec) Parse(text string) (Value, error) {
	v := Value{key: s.Key, typ: s.Type, sensitive: s.Sensitive, text: text}
	switch s.Type {
	case TypeString:
		v.str = text
	case TypeInt:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return Value{}, s.invalid("值必须是 64 位十进制整数")
		}
		v.num, v.text = n, strconv.FormatInt(n, 10)
	case TypeBool:
		switch text {
		case "true", "false":
			v.flag = text == "true"
		default:
			return Value{}, s.invalid("值必须是 true 或 false")
		}
	case TypeJSON:
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(text)); err != nil {
			return Value{}, s.invalid("值必须是合法的 JSON")
		}
		if buf.String() == "null" {
			return Value{}, s.invalid("值不能为 null")
		}
		v.raw, v.text = json.RawMessage(buf.Bytes()), buf.String()
	default:
		return Value{}, s.invalid(fmt.Sprintf("未知的值类型 %q", s.Type))
	}
	return v, nil
}

// ParseJSON turns the "value" member of an HTTP body into a typed Value. The
// JSON must have the key's type: a string key takes a JSON string, an int key
// a JSON integer within int64 (1.5, 1e3, "1" and true are rejected), a bool
// key a JSON bool ("true" is rejected), and a json key any JSON value except
// null. A missing value or null is rejected for every type.
func (s Spec) ParseJSON(raw json.RawMessage) (Value, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return Value{}, s.invalid("缺少 value")
	}
	if !json.Valid(trimmed) {
		return Value{}, s.invalid("value 不是合法的 JSON")
	}
	if s.Type == TypeJSON {
		return s.Parse(string(trimmed))
	}
	var decoded any
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber() // keep integers exact and spot 1.5 / 1e3
	if err := dec.Decode(&decoded); err != nil {
		return Value{}, s.invalid("value 不是合法的 JSON")
	}
	switch d := decoded.(type) {
	case string:
		if s.Type == TypeString {
			return s.Parse(d)
		}
	case json.Number:
		if s.Type == TypeInt {
			if strings.ContainsAny(d.String(), ".eE") {
				return Value{}, s.invalid("值必须是整数")
			}
			return s.Parse(d.String())
		}
	case bool:
		if s.Type == TypeBool {
			return s.Parse(strconv.FormatBool(d))
		}
	case nil:
		return Value{}, s.invalid("值不能为 null")
	}
	return Value{}, s.invalid(fmt.Sprintf("值必须是 %s 类型", s.jsonTypeName()))
}

// Check applies the key's constraints: type, enum, int range (inclusive),
// string length in characters, then ValidateFunc.
func (s Spec) Check(v Value) error {
	if v.typ != s.Type {
		return s.invalid("值类型与注册类型不一致")
	}
	if len(s.Enum) > 0 && !slices.Contains(s.canonicalEnum(), v.text) {
		if s.Sensitive { // its allowed values are masked like the value
			return s.invalid("值不在允许范围内（敏感配置不列出可选值，请向配置负责人确认）")
		}
		return s.invalid("值不在允许范围内，可选值：" + strings.Join(s.Enum, "、"))
	}
	if s.Min != nil && v.num < *s.Min {
		return s.invalid(fmt.Sprintf("值不能小于 %d", *s.Min))
	}
	if s.Max != nil && v.num > *s.Max {
		return s.invalid(fmt.Sprintf("值不能大于 %d", *s.Max))
	}
	if s.MaxLen > 0 && utf8.RuneCountInString(v.str) > s.MaxLen {
		return s.invalid(fmt.Sprintf("长度不能超过 %d 个字符", s.MaxLen))
	}
	if s.ValidateFunc != nil {
		if err := s.ValidateFunc(v); err != nil {
			if s.Sensitive {
				// The module's message may quote the secret.
				return s.invalid("值未通过业务校验")
			}
			return s.invalid(err.Error())
		}
	}
	return nil
}

// canonicalEnum parses each entry so "05" matches 5 and JSON compares compacted.
func (s Spec) canonicalEnum() []string {
	out := make([]string, 0, len(s.Enum))
	for _, e := range s.Enum {
		if v, err := s.Parse(e); err == nil {
			out = append(out, v.text)
		}
	}
	return out
}

func (s Spec) jsonTypeName() string {
	switch s.Type {
	case TypeString:
		return "字符串"
	case TypeInt:
		return "整数"
	case TypeBool:
		return "布尔"
	}
	return string(s.Type)
}

func (s Spec) invalid(reason string) *ValueError {
	return &ValueError{Key: s.Key, Reason: reason}
}
