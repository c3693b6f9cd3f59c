package sysconfig_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/sysconfig"
)

func TestRegistryRegisterRejects(t *testing.T) {
	t.Parallel()
	good := spec("pay.order.limit", sysconfig.TypeInt, "10")
	mutate := func(f func(*sysconfig.Spec)) sysconfig.Spec {
		s := spec("pay.order.other", sysconfig.TypeInt, "1")
		f(&s)
		return s
	}
	tests := []struct {
		name     string
		existing []sysconfig.Spec
		specs    []sysconfig.Spec
		wantKey  string
		wantKind error
	}{
		{"duplicate across calls", []sysconfig.Spec{good}, []sysconfig.Spec{good}, good.Key, sysconfig.ErrDuplicateKey},
		{"duplicate in one call", nil, []sysconfig.Spec{good, good}, good.Key, sysconfig.ErrDuplicateKey},
		{"type clash across calls", []sysconfig.Spec{good}, []sysconfig.Spec{spec(good.Key, sysconfig.TypeString, "x")}, good.Key, sysconfig.ErrTypeClash},
		{"type clash in one call", nil, []sysconfig.Spec{good, spec(good.Key, sysconfig.TypeBool, "true")}, good.Key, sysconfig.ErrTypeClash},
		{"two segments", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Key = "pay.limit" })}, "pay.limit", sysconfig.ErrInvalidKey},
		{"four segments", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Key = "pay.a.b.c" })}, "pay.a.b.c", sysconfig.ErrInvalidKey},
		{"upper case", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Key = "Pay.order.x" })}, "Pay.order.x", sysconfig.ErrInvalidKey},
		{"leading digit", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Key = "pay.1order.x" })}, "pay.1order.x", sysconfig.ErrInvalidKey},
		{"hyphen", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Key = "pay.order.max-x" })}, "pay.order.max-x", sysconfig.ErrInvalidKey},
		{"module mismatch", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Module = "wallet" })}, "pay.order.other", sysconfig.ErrInvalidSpec},
		{"unknown type", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Type = "float" })}, "pay.order.other", sysconfig.ErrInvalidSpec},
		{"no description", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Description = " " })}, "pay.order.other", sysconfig.ErrInvalidSpec},
		{"min above max", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Min, s.Max = i64(5), i64(1) })}, "pay.order.other", sysconfig.ErrInvalidSpec},
		{"range on string", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Type, s.Default, s.Min = sysconfig.TypeString, "a", i64(1) })}, "pay.order.other", sysconfig.ErrInvalidSpec},
		{"max len on int", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.MaxLen = 3 })}, "pay.order.other", sysconfig.ErrInvalidSpec},
		{"unknown ui hint", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.UIHint = "slider" })}, "pay.order.other", sysconfig.ErrInvalidSpec},
		{"select without enum", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.UIHint = sysconfig.UISelect })}, "pay.order.other", sysconfig.ErrInvalidSpec},
		{"unknown fallback", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Fallback = 9 })}, "pay.order.other", sysconfig.ErrInvalidSpec},
		{"enum entry wrong type", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Enum = []string{"1", "x"} })}, "pay.order.other", sysconfig.ErrInvalidSpec},
		{"default unparsable", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Default = "1.5" })}, "pay.order.other", sysconfig.ErrInvalidDefault},
		{"default empty int", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Default = "" })}, "pay.order.other", sysconfig.ErrInvalidDefault},
		{"default out of range", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Min = i64(2) })}, "pay.order.other", sysconfig.ErrInvalidDefault},
		{"default not in enum", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) { s.Enum = []string{"2", "3"} })}, "pay.order.other", sysconfig.ErrInvalidDefault},
		{"default fails custom", nil, []sysconfig.Spec{mutate(func(s *sysconfig.Spec) {
			s.ValidateFunc = func(sysconfig.Value) error { return errors.New("不允许") }
		})}, "pay.order.other", sysconfig.ErrInvalidDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := sysconfig.NewRegistry()
			require.NoError(t, reg.Register(tt.existing...))
			err := reg.Register(tt.specs...)
			var re *sysconfig.RegistrationError
			require.ErrorAs(t, err, &re, "specs %+v", tt.specs)
			require.Equal(t, tt.wantKey, re.Key)
			require.NotEmpty(t, re.Reason)
			require.ErrorIs(t, err, tt.wantKind)
			require.Len(t, reg.List(""), len(tt.existing), "nothing from the failing call is registered")
		})
	}
}

func TestRegistryRegisterIsAtomic(t *testing.T) {
	t.Parallel()
	reg := sysconfig.NewRegistry()
	err := reg.Register(
		spec("pay.order.a", sysconfig.TypeInt, "1"),
		spec("wallet.alert.b", sysconfig.TypeBool, "true"),
		spec("pay.order.bad", sysconfig.TypeInt, "x"),
	)
	require.ErrorIs(t, err, sysconfig.ErrInvalidDefault)
	_, ok := reg.Lookup("pay.order.a")
	require.False(t, ok, "valid spec before the bad one must not be registered")
	require.Empty(t, reg.Modules())
}

func TestRegistryInvalidDefaultOfSensitiveKeyIsNotEchoed(t *testing.T) {
	t.Parallel()
	s := spec("pay.wechat.token", sysconfig.TypeString, secret)
	s.Sensitive, s.MaxLen = true, 3
	err := sysconfig.NewRegistry().Register(s)
	require.ErrorIs(t, err, sysconfig.ErrInvalidDefault)
	require.NotContains(t, err.Error(), secret)
}

func TestRegistryLookupListModules(t *testing.T) {
	t.Parallel()
	reg := sysconfig.NewRegistry()
	enum := spec("pay.method.default", sysconfig.TypeString, "wechat")
	enum.Enum = []string{"wechat", "alipay"}
	reg.MustRegister(spec("wallet.alert.threshold", sysconfig.TypeInt, "100"), enum)
	reg.MustRegister(spec("pay.order.limit", sysconfig.TypeInt, "5"))

	got, ok := reg.Lookup("pay.method.default")
	require.True(t, ok)
	require.Equal(t, sysconfig.TypeString, got.Type)
	got.Enum[0] = "mutated"
	again, _ := reg.Lookup("pay.method.default")
	require.Equal(t, "wechat", again.Enum[0], "Lookup must return a copy")

	_, ok = reg.Lookup("pay.order.missing")
	require.False(t, ok)

	var keys []string
	for _, s := range reg.List("pay") {
		keys = append(keys, s.Key)
	}
	require.Equal(t, []string{"pay.method.default", "pay.order.limit"}, keys)
	require.Len(t, reg.List(""), 3)
	require.Empty(t, reg.List("nobody"))
	require.Equal(t, []string{"pay", "wallet"}, reg.Modules())
}

func TestRegistryMustRegisterPanics(t *testing.T) {
	t.Parallel()
	reg := sysconfig.NewRegistry()
	reg.MustRegister(spec("pay.order.limit", sysconfig.TypeInt, "5"))
	require.Panics(t, func() { reg.MustRegister(spec("pay.order.limit", sysconfig.TypeString, "5")) })
}

func TestValidKey(t *testing.T) {
	t.Parallel()

	for key, want := range map[string]bool{
		"relay.delivery.batch_size": true, "pay.limits.daily": true,
		"relay.batch": false, "Relay.delivery.x": false, "a.b.c.d": false, "a.b-c.d": false, "": false,
	} {
		require.Equal(t, want, sysconfig.ValidKey(key), "key %q", key)
	}
}
