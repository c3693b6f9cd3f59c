package main

import (
	"bytes"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/apps/domain"
	"github.com/july/template/internal/envconf"
)

// A domain's own variable is read at start-up with the API's: missing or
// invalid fails like any configuration error, naming it; -h lists it; the
// domain's builder gets the parsed value.
func TestDomainEnvThroughTheAPI(t *testing.T) {
	t.Parallel()
	var got any
	ds := []domain.Domain{{
		Name: "cards",
		APIEnv: domain.Env{
			Help: "  CARDS_PARTNER_URL    base URL of the card partner's API (required)\n",
			Load: func(r *envconf.Reader) any {
				u, _ := url.Parse(r.URL("CARDS_PARTNER_URL", "https"))
				return u
			},
		},
		API: func(d domain.APIDeps) (domain.API, error) { got = d.Env; return domain.API{}, nil },
	}}

	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, runDomains(t.Context(), ds, []string{"-h"}, env(nil), &out, &errOut))
	require.Contains(t, out.String(), "Environment:\n")
	require.Contains(t, out.String(), "  domain cards:\n  CARDS_PARTNER_URL ")

	for _, value := range []string{"", "http://u:hunter2@partner.test"} {
		e := validEnv()
		e["CARDS_PARTNER_URL"] = value
		out.Reset()
		errOut.Reset()
		code := runDomains(t.Context(), ds, nil, env(e), &out, &errOut)
		require.Equal(t, exitUsage, code, "value %q: %s", value, errOut.String())
		require.Contains(t, errOut.String(), "CARDS_PARTNER_URL: ")
		require.NotContains(t, errOut.String(), "hunter2", "rule: values are never printed")
	}

	e := validEnv()
	e["CARDS_PARTNER_URL"] = "https://partner.test/v1"
	cfg, err := loadConfigOf(ds, env(e))
	require.NoError(t, err)
	_, err = domain.BuildAPI(ds, domain.APIDeps{Settings: cfg.DomainEnv})
	require.NoError(t, err)
	u, ok := got.(*url.URL)
	require.True(t, ok, "the builder gets what Load returned, got %T", got)
	require.Equal(t, "https://partner.test/v1", u.String())
}
