package postgres_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/contracttests/testinfra"
)

func TestRegisterPoolStats(t *testing.T) {
	t.Parallel()
	main := testinfra.NewDB(t, testinfra.DBOpts{}).Bun
	relay := testinfra.NewDB(t, testinfra.DBOpts{}).Bun
	reg := prometheus.NewRegistry()
	require.NoError(t, postgres.RegisterPoolStats(reg, main, relay))
	families, err := reg.Gather()
	require.NoError(t, err)
	pools := map[string]map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "db_name" {
					if pools[f.GetName()] == nil {
						pools[f.GetName()] = map[string]bool{}
					}
					pools[f.GetName()][l.GetValue()] = true
				}
			}
		}
	}
	for _, name := range []string{"go_sql_open_connections", "go_sql_in_use_connections", "go_sql_idle_connections", "go_sql_wait_count_total", "go_sql_wait_duration_seconds_total"} {
		require.Equal(t, map[string]bool{postgres.MainPool: true, postgres.RelayPool: true}, pools[name], "%s per pool", name)
	}
	require.Error(t, postgres.RegisterPoolStats(reg, main, nil), "registering the same pool twice is an error")
}
