package domain_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/ports"
)

// BuildAPI and BuildRelay skip the sides a domain leaves nil, keep list
// order, join the relay sides, and name the domain whose side failed.
func TestBuildKeepsOrderAndNamesTheFailingDomain(t *testing.T) {
	t.Parallel()

	relay := func(event, table string) func(domain.RelayDeps) (domain.Relay, error) {
		return func(domain.RelayDeps) (domain.Relay, error) {
			return domain.Relay{
				Consumers:         []queue.Consumer{{EventType: event}},
				IdempotencyTables: []ports.IdempotencyTable{{Name: table}},
			}, nil
		}
	}
	ds := []domain.Domain{
		{Name: "a", Relay: relay("a.created", "a.order")},
		{Name: "config-only"},
		{Name: "b", Relay: relay("b.created", "b.order"), API: func(domain.APIDeps) (domain.API, error) {
			return domain.API{AccessRoutes: nil}, nil
		}},
	}
	r, err := domain.BuildRelay(ds, domain.RelayDeps{})
	require.NoError(t, err)
	require.Equal(t, []string{"a.created", "b.created"}, []string{r.Consumers[0].EventType, r.Consumers[1].EventType})
	require.Equal(t, []string{"a.order", "b.order"}, []string{r.IdempotencyTables[0].Name, r.IdempotencyTables[1].Name})
	require.Empty(t, r.TaskTables)
	apis, err := domain.BuildAPI(ds, domain.APIDeps{})
	require.NoError(t, err)
	require.Len(t, apis, 1, "only b has an API side")

	boom := errors.New("boom")
	ds = append(ds, domain.Domain{Name: "broken", API: func(domain.APIDeps) (domain.API, error) { return domain.API{}, boom }})
	_, err = domain.BuildAPI(ds, domain.APIDeps{})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "domain broken: api")
}
