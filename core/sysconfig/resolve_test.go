package sysconfig_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/sysconfig"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	limit := spec("pay.order.limit", sysconfig.TypeInt, "10")
	limit.Min, limit.Max = i64(1), i64(100)
	limitDefault := limit
	limitDefault.Fallback = sysconfig.FallbackDefault
	token := spec("pay.wechat.token", sysconfig.TypeString, "placeholder")
	token.Sensitive, token.MaxLen = true, 8

	last, err := limit.Parse("42")
	require.NoError(t, err)
	otherKey, err := spec("pay.order.other", sysconfig.TypeInt, "1").Parse("77")
	require.NoError(t, err)
	lastToken, err := token.Parse("tok-old")
	require.NoError(t, err)

	row := func(value string, typ sysconfig.Type) *sysconfig.Stored {
		return &sysconfig.Stored{Key: "pay.order.limit", Value: value, Type: typ, Version: 1}
	}
	tests := []struct {
		name       string
		spec       sysconfig.Spec
		stored     *sysconfig.Stored
		last       *sysconfig.Value
		wantText   string
		wantSource sysconfig.Source
		wantAlert  string // alert code; "" means none
	}{
		{"missing row uses default quietly", limit, nil, &last, "10", sysconfig.SourceDefault, ""},
		{"valid stored", limit, row("55", sysconfig.TypeInt), &last, "55", sysconfig.SourceStored, ""},
		{"stored without type column", limit, row("55", ""), nil, "55", sysconfig.SourceStored, ""},
		{"unparsable uses last verified", limit, row("abc", sysconfig.TypeInt), &last, "42", sysconfig.SourceLastVerified, sysconfig.CodeStoredValueInvalid},
		{"out of range uses last verified", limit, row("500", sysconfig.TypeInt), &last, "42", sysconfig.SourceLastVerified, sysconfig.CodeStoredValueInvalid},
		{"type drift uses last verified", limit, row("55", sysconfig.TypeString), &last, "42", sysconfig.SourceLastVerified, sysconfig.CodeStoredValueInvalid},
		{"no last verified uses default", limit, row("abc", sysconfig.TypeInt), nil, "10", sysconfig.SourceDefault, sysconfig.CodeStoredValueInvalid},
		{"last verified of another key ignored", limit, row("abc", sysconfig.TypeInt), &otherKey, "10", sysconfig.SourceDefault, sysconfig.CodeStoredValueInvalid},
		{"default policy ignores last verified", limitDefault, row("abc", sysconfig.TypeInt), &last, "10", sysconfig.SourceDefault, sysconfig.CodeStoredValueInvalid},
		{"sensitive too long", token, &sysconfig.Stored{Key: token.Key, Value: secret, Type: sysconfig.TypeString}, &lastToken, "tok-old", sysconfig.SourceLastVerified, sysconfig.CodeStoredValueInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := sysconfig.Resolve(tt.spec, tt.stored, tt.last)
			require.Equal(t, tt.wantText, r.Value.Text(), "stored %+v", tt.stored)
			require.Equal(t, tt.wantSource, r.Source)
			if tt.wantAlert == "" {
				require.Nil(t, r.Alert)
				return
			}
			require.NotNil(t, r.Alert)
			require.Equal(t, tt.wantAlert, r.Alert.Code)
			require.Equal(t, tt.spec.Key, r.Alert.Key)
			require.Contains(t, r.Alert.Message, tt.spec.Key)
			require.NotContains(t, r.Alert.Message, tt.stored.Value, "alert must not carry the raw value")
			require.NotContains(t, fmt.Sprintf("%+v", r), secret)
		})
	}
}

func TestResolveUnavailable(t *testing.T) {
	t.Parallel()
	limit := spec("pay.order.limit", sysconfig.TypeInt, "10")
	last, err := limit.Parse("42")
	require.NoError(t, err)
	tests := []struct {
		name       string
		fallback   sysconfig.Fallback
		last       *sysconfig.Value
		wantText   string
		wantSource sysconfig.Source
	}{
		{"last verified", sysconfig.FallbackLastVerified, &last, "42", sysconfig.SourceLastVerified},
		{"none known", sysconfig.FallbackLastVerified, nil, "10", sysconfig.SourceDefault},
		{"default policy", sysconfig.FallbackDefault, &last, "10", sysconfig.SourceDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := limit
			s.Fallback = tt.fallback
			r := sysconfig.ResolveUnavailable(s, tt.last)
			require.Equal(t, tt.wantText, r.Value.Text())
			require.Equal(t, tt.wantSource, r.Source)
			require.NotNil(t, r.Alert)
			require.Equal(t, sysconfig.CodeReadFailed, r.Alert.Code)
			require.Contains(t, r.Alert.Message, "pay.order.limit")
		})
	}
}
