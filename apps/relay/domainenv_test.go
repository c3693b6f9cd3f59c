package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/apps/domain"
	"github.com/july/template/internal/envconf"
)

// The relay reads and lists a domain's relay variables like its own.
func TestDomainEnvThroughTheRelay(t *testing.T) {
	t.Parallel()
	ds := []domain.Domain{{
		Name: "cards",
		RelayEnv: domain.Env{
			Help: "  CARDS_CALLBACK_URL   base URL the card consumer calls (required)\n",
			Load: func(r *envconf.Reader) any { return r.URL("CARDS_CALLBACK_URL", "https") },
		},
	}}
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, runDomains(t.Context(), ds, []string{"-h"}, func(string) string { return "" }, &out, &errOut))
	require.Contains(t, out.String(), "  domain cards:\n  CARDS_CALLBACK_URL ")

	getenv := func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres", "REDIS_URL": "redis://127.0.0.1:6379/0"}[k]
	}
	require.Equal(t, exitUsage, runDomains(t.Context(), ds, nil, getenv, &out, &errOut))
	require.Contains(t, errOut.String(), "CARDS_CALLBACK_URL: is required")

	cfg, err := loadConfigOf(ds, func(k string) string {
		if k == "CARDS_CALLBACK_URL" {
			return "https://partner.test"
		}
		return getenv(k)
	})
	require.NoError(t, err)
	require.Equal(t, domain.Settings{"cards": "https://partner.test"}, cfg.DomainEnv)
}
