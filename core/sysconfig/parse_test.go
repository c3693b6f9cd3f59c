package sysconfig_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/sysconfig"
)

func TestSpecParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		typ      sysconfig.Type
		text     string
		wantText string
		wantErr  bool
	}{
		{"string any", sysconfig.TypeString, " 中文 x ", " 中文 x ", false},
		{"string empty", sysconfig.TypeString, "", "", false},
		{"int", sysconfig.TypeInt, "42", "42", false},
		{"int negative", sysconfig.TypeInt, "-7", "-7", false},
		{"int canonical", sysconfig.TypeInt, "+007", "7", false},
		{"int max", sysconfig.TypeInt, "9223372036854775807", "9223372036854775807", false},
		{"int overflow", sysconfig.TypeInt, "9223372036854775808", "", true},
		{"int float", sysconfig.TypeInt, "1.5", "", true},
		{"int space", sysconfig.TypeInt, " 1", "", true},
		{"int empty", sysconfig.TypeInt, "", "", true},
		{"int underscore", sysconfig.TypeInt, "1_000", "", true},
		{"bool true", sysconfig.TypeBool, "true", "true", false},
		{"bool false", sysconfig.TypeBool, "false", "false", false},
		{"bool 1", sysconfig.TypeBool, "1", "", true},
		{"bool upper", sysconfig.TypeBool, "TRUE", "", true},
		{"json object compacted", sysconfig.TypeJSON, `{ "a" : [1, 2] }`, `{"a":[1,2]}`, false},
		{"json scalar", sysconfig.TypeJSON, `"x"`, `"x"`, false},
		{"json null", sysconfig.TypeJSON, `null`, "", true},
		{"json broken", sysconfig.TypeJSON, `{"a":`, "", true},
		{"json two values", sysconfig.TypeJSON, `1 2`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := spec("m.g.k", tt.typ, "")
			v, err := s.Parse(tt.text)
			if tt.wantErr {
				var ve *sysconfig.ValueError
				require.ErrorAs(t, err, &ve, "text %q", tt.text)
				require.Equal(t, "m.g.k", ve.Key)
				require.Equal(t, sysconfig.CodeValueInvalid, sysconfig.Code(err))
				return
			}
			require.NoError(t, err, "text %q", tt.text)
			require.Equal(t, tt.wantText, v.Text(), "text %q", tt.text)
			require.Equal(t, tt.typ, v.Type())
		})
	}
}

func TestValueAccessors(t *testing.T) {
	t.Parallel()
	s, err := spec("m.g.s", sysconfig.TypeString, "").Parse("abc")
	require.NoError(t, err)
	n, err := spec("m.g.n", sysconfig.TypeInt, "").Parse("-3")
	require.NoError(t, err)
	b, err := spec("m.g.b", sysconfig.TypeBool, "").Parse("true")
	require.NoError(t, err)
	j, err := spec("m.g.j", sysconfig.TypeJSON, "").Parse(`[1, 2]`)
	require.NoError(t, err)

	require.Equal(t, "abc", s.Str())
	require.Equal(t, int64(-3), n.Int())
	require.True(t, b.Bool())
	require.JSONEq(t, `[1,2]`, string(j.JSON()))
	require.Equal(t, "m.g.j", j.Key())
	require.Equal(t, `"abc"`, string(s.JSONValue()))
	require.Equal(t, `-3`, string(n.JSONValue()))
	require.Equal(t, `true`, string(b.JSONValue()))
	require.Equal(t, `[1,2]`, string(j.JSONValue()))
}

func TestSpecParseJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		typ      sysconfig.Type
		raw      string
		wantText string
		wantErr  bool
	}{
		{"string", sysconfig.TypeString, `"hi 你好"`, "hi 你好", false},
		{"string escaped", sysconfig.TypeString, `"a\"b"`, `a"b`, false},
		{"string rejects number", sysconfig.TypeString, `1`, "", true},
		{"string rejects bool", sysconfig.TypeString, `true`, "", true},
		{"string rejects object", sysconfig.TypeString, `{}`, "", true},
		{"int", sysconfig.TypeInt, `12`, "12", false},
		{"int negative", sysconfig.TypeInt, ` -12 `, "-12", false},
		{"int rejects fraction", sysconfig.TypeInt, `1.5`, "", true},
		{"int rejects 1.0", sysconfig.TypeInt, `1.0`, "", true},
		{"int rejects exponent", sysconfig.TypeInt, `1e3`, "", true},
		{"int rejects string", sysconfig.TypeInt, `"1"`, "", true},
		{"int rejects bool", sysconfig.TypeInt, `true`, "", true},
		{"int rejects overflow", sysconfig.TypeInt, `9223372036854775808`, "", true},
		{"bool", sysconfig.TypeBool, `false`, "false", false},
		{"bool rejects string", sysconfig.TypeBool, `"true"`, "", true},
		{"bool rejects number", sysconfig.TypeBool, `1`, "", true},
		{"json object", sysconfig.TypeJSON, `{"a": 1}`, `{"a":1}`, false},
		{"json array", sysconfig.TypeJSON, `[ ]`, `[]`, false},
		{"json number", sysconfig.TypeJSON, `3`, `3`, false},
		{"json string", sysconfig.TypeJSON, `"x"`, `"x"`, false},
		{"json rejects null", sysconfig.TypeJSON, `null`, "", true},
		{"string rejects null", sysconfig.TypeString, `null`, "", true},
		{"int rejects null", sysconfig.TypeInt, `null`, "", true},
		{"rejects missing", sysconfig.TypeString, ``, "", true},
		{"rejects blank", sysconfig.TypeBool, `  `, "", true},
		{"rejects invalid json", sysconfig.TypeString, `"abc`, "", true},
		{"rejects trailing data", sysconfig.TypeInt, `1 2`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := spec("m.g.k", tt.typ, "").ParseJSON(json.RawMessage(tt.raw))
			if tt.wantErr {
				var ve *sysconfig.ValueError
				require.ErrorAs(t, err, &ve, "raw %q", tt.raw)
				require.NotEmpty(t, ve.Reason)
				return
			}
			require.NoError(t, err, "raw %q", tt.raw)
			require.Equal(t, tt.wantText, v.Text(), "raw %q", tt.raw)
		})
	}
}

func TestSpecCheck(t *testing.T) {
	t.Parallel()
	errCustom := errors.New("必须是偶数")
	even := func(v sysconfig.Value) error {
		if v.Int()%2 != 0 {
			return errCustom
		}
		return nil
	}
	ranged := spec("m.g.r", sysconfig.TypeInt, "")
	ranged.Min, ranged.Max = i64(1), i64(10)
	enum := spec("m.g.e", sysconfig.TypeString, "")
	enum.Enum = []string{"alipay", "wechat"}
	intEnum := spec("m.g.ie", sysconfig.TypeInt, "")
	intEnum.Enum = []string{"05", "10"}
	jsonEnum := spec("m.g.je", sysconfig.TypeJSON, "")
	jsonEnum.Enum = []string{`{"a": 1}`}
	short := spec("m.g.s", sysconfig.TypeString, "")
	short.MaxLen = 3
	custom := spec("m.g.c", sysconfig.TypeInt, "")
	custom.ValidateFunc = even

	tests := []struct {
		name       string
		spec       sysconfig.Spec
		text       string
		wantReason string // "" means valid
	}{
		{"min inclusive", ranged, "1", ""},
		{"max inclusive", ranged, "10", ""},
		{"below min", ranged, "0", "值不能小于 1"},
		{"above max", ranged, "11", "值不能大于 10"},
		{"enum member", enum, "wechat", ""},
		{"enum non member", enum, "cash", "值不在允许范围内，可选值：alipay、wechat"},
		{"enum case sensitive", enum, "Wechat", "值不在允许范围内，可选值：alipay、wechat"},
		{"int enum canonical", intEnum, "5", ""},
		{"int enum miss", intEnum, "6", "值不在允许范围内，可选值：05、10"},
		{"json enum compacted", jsonEnum, `{"a":1}`, ""},
		{"max len chars", short, "中文字", ""},
		{"max len exceeded", short, "abcd", "长度不能超过 3 个字符"},
		{"custom ok", custom, "4", ""},
		{"custom fails", custom, "3", "必须是偶数"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := tt.spec.Parse(tt.text)
			require.NoError(t, err, "text %q", tt.text)
			err = tt.spec.Check(v)
			if tt.wantReason == "" {
				require.NoError(t, err, "text %q", tt.text)
				return
			}
			var ve *sysconfig.ValueError
			require.ErrorAs(t, err, &ve, "text %q", tt.text)
			require.Equal(t, tt.wantReason, ve.Reason, "text %q", tt.text)
			require.Equal(t, tt.spec.Key, ve.Key)
		})
	}
}

func TestSpecCheckTypeMismatch(t *testing.T) {
	t.Parallel()
	v, err := spec("m.g.a", sysconfig.TypeString, "").Parse("5")
	require.NoError(t, err)
	err = spec("m.g.b", sysconfig.TypeInt, "").Check(v)
	require.Equal(t, sysconfig.CodeValueInvalid, sysconfig.Code(err))
}
