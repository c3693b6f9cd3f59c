package domain_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/apps/domain"
	"github.com/july/template/internal/envconf"
)

// cards is a domain whose consumer calls a partner: its relay side needs
// a validated base URL, read like the apps' variables.
func cards(got *any) domain.Domain {
	env := domain.Env{
		Help: "  CARDS_CALLBACK_URL   base URL of the card partner's callback API (required)\n",
		Load: func(r *envconf.Reader) any {
			u, _ := url.Parse(r.URL("CARDS_CALLBACK_URL", "https", "http"))
			return u
		},
	}
	return domain.Domain{Name: "cards", RelayEnv: env, Relay: func(d domain.RelayDeps) (domain.Relay, error) {
		*got = d.Env
		return domain.Relay{}, nil
	}}
}

func TestDomainEnvIsValidatedListedAndHandedToTheBuilder(t *testing.T) {
	t.Parallel()
	var got any
	ds := []domain.Domain{{Name: "plain"}, cards(&got)}

	require.Contains(t, domain.EnvHelp(ds, domain.SideRelay), "  domain cards:\n  CARDS_CALLBACK_URL ")
	require.Empty(t, domain.EnvHelp(ds, domain.SideAPI), "rule: only the side that declares it lists it")

	for value, want := range map[string]string{
		"":                             "CARDS_CALLBACK_URL: is required",
		"ftp://u:hunter2@partner.test": "CARDS_CALLBACK_URL: is not a valid https/http URL (value hidden)",
		"https://u:hunter2@":           "CARDS_CALLBACK_URL: is not a valid",
	} {
		r := envconf.New(func(k string) string { return map[string]string{"CARDS_CALLBACK_URL": value}[k] })
		domain.LoadEnv(ds, domain.SideRelay, r)
		require.ErrorContains(t, r.Err(), want, "value %q", value)
		require.NotContains(t, r.Err().Error(), "hunter2", "rule: a URL is never echoed")
	}

	r := envconf.New(func(k string) string { return map[string]string{"CARDS_CALLBACK_URL": "https://partner.test/v1"}[k] })
	settings := domain.LoadEnv(ds, domain.SideRelay, r)
	require.NoError(t, r.Err())
	_, err := domain.BuildRelay(ds, domain.RelayDeps{Settings: settings})
	require.NoError(t, err)
	u, ok := got.(*url.URL)
	require.True(t, ok, "the builder gets what Load returned, got %T", got)
	require.Equal(t, "partner.test", u.Host)
	require.Empty(t, domain.LoadEnv(ds, domain.SideAPI, envconf.New(func(string) string { return "" })), "rule: the API reads no relay variable")
}
