package sysconfig_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/sysconfig"
)

func TestViewOf(t *testing.T) {
	t.Parallel()
	reg := testRegistry()
	lookup := func(key string) *sysconfig.Spec {
		s, ok := reg.Lookup(key)
		require.True(t, ok, key)
		return &s
	}
	at := time.Date(2025, 7, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		spec   *sysconfig.Spec
		stored *sysconfig.Stored
		want   string // JSON of the view
	}{
		{
			"registered int with row", lookup("pay.order.limit"),
			&sysconfig.Stored{Key: "pay.order.limit", Value: "20", Type: sysconfig.TypeInt, Version: 3, UpdatedAt: at, UpdatedBy: "admin-1"},
			`{"key":"pay.order.limit","module":"pay","value":20,"value_type":"int","description":"测试配置","readonly":false,"sensitive":false,
			  "registered":true,"ui_hint":"number","constraints":{"min":1,"max":100},"version":3,"updated_at":"2025-07-01T08:00:00Z","updated_by":"admin-1"}`,
		},
		{
			"registered without row shows default", lookup("pay.wechat.enabled"), nil,
			`{"key":"pay.wechat.enabled","module":"pay","value":false,"value_type":"bool","description":"测试配置","readonly":false,"sensitive":false,
			  "registered":true,"ui_hint":"switch","constraints":{},"version":0,"updated_at":null,"updated_by":""}`,
		},
		{
			"sensitive masked", lookup("pay.wechat.token"),
			&sysconfig.Stored{Key: "pay.wechat.token", Value: secret, Type: sysconfig.TypeString, Version: 1, UpdatedAt: at, UpdatedBy: "admin-1"},
			`{"key":"pay.wechat.token","module":"pay","value":"******","value_type":"string","description":"测试配置","readonly":false,"sensitive":true,
			  "registered":true,"ui_hint":"text","constraints":{},"version":1,"updated_at":"2025-07-01T08:00:00Z","updated_by":"admin-1"}`,
		},
		{
			"row read-only wins", lookup("pay.order.limit"),
			&sysconfig.Stored{Key: "pay.order.limit", Value: "oops", ReadOnly: true, Version: 2},
			`{"key":"pay.order.limit","module":"pay","value":"oops","value_type":"int","description":"测试配置","readonly":true,"sensitive":false,
			  "registered":true,"ui_hint":"number","constraints":{"min":1,"max":100},"version":2,"updated_at":null,"updated_by":""}`,
		},
		{
			"unregistered is read-only and masked", nil,
			&sysconfig.Stored{Key: "old.misc.flag", Value: secret, Type: sysconfig.TypeString, Module: "old", Description: "遗留", Version: 5},
			`{"key":"old.misc.flag","module":"old","value":"******","value_type":"string","description":"遗留","readonly":true,"sensitive":true,
			  "registered":false,"ui_hint":"","constraints":{},"version":5,"updated_at":null,"updated_by":""}`,
		},
		{"nothing", nil, nil, `{"key":"","module":"","value":null,"value_type":"","description":"","readonly":false,"sensitive":false,
			  "registered":false,"ui_hint":"","constraints":{},"version":0,"updated_at":null,"updated_by":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(sysconfig.ViewOf(tt.spec, tt.stored))
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got), "stored %+v", tt.stored)
			require.NotContains(t, string(got), secret)
		})
	}
}

func TestSensitiveValueNeverPrinted(t *testing.T) {
	t.Parallel()
	s := spec("pay.wechat.token", sysconfig.TypeString, "")
	s.Sensitive = true
	v, err := s.Parse(secret)
	require.NoError(t, err)
	require.Equal(t, secret, v.Text(), "Text is the one unmasked accessor")
	require.True(t, v.Sensitive())

	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "value", v)
	outputs := map[string]string{
		"slog": buf.String(),
		"%v":   fmt.Sprintf("%v", v),
		"%s":   fmt.Sprintf("%s", v), //nolint:staticcheck // the verb itself is under test
		"%+v":  fmt.Sprintf("%+v", v),
		"%#v":  fmt.Sprintf("%#v", v),
	}
	for name, out := range outputs {
		require.NotContains(t, out, secret, name)
		require.Contains(t, out, sysconfig.Mask, name)
	}

	plain, err := spec("pay.order.note", sysconfig.TypeString, "").Parse("hello")
	require.NoError(t, err)
	require.Equal(t, "hello", plain.LogValue().String())
	require.Equal(t, "hello", fmt.Sprint(plain))
}

func TestMaskedText(t *testing.T) {
	t.Parallel()
	plain := spec("pay.order.note", sysconfig.TypeString, "")
	sensitive := plain
	sensitive.Sensitive = true
	tests := []struct {
		name string
		spec *sysconfig.Spec
		want string
	}{
		{"plain", &plain, "abc"},
		{"sensitive", &sensitive, sysconfig.Mask},
		{"unregistered", nil, sysconfig.Mask},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, sysconfig.MaskedText(tt.spec, "abc"), tt.name)
	}
}

func TestSensitiveCustomValidatorMessageHidden(t *testing.T) {
	t.Parallel()
	s := spec("pay.wechat.token", sysconfig.TypeString, "")
	s.Sensitive = true
	s.ValidateFunc = func(v sysconfig.Value) error { return fmt.Errorf("token %s revoked", v.Text()) }
	v, err := s.Parse(secret)
	require.NoError(t, err)
	err = s.Check(v)
	require.Equal(t, sysconfig.CodeValueInvalid, sysconfig.Code(err))
	require.NotContains(t, err.Error(), secret)
	require.NotContains(t, sysconfig.Message(err), secret)
}
