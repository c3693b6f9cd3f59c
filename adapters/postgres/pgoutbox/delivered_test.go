package pgoutbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
)

func TestOutboxDeliveredReader(t *testing.T) {
	t.Parallel()
	contracttests.RunOutboxDeliveredReader(t, func(t *testing.T) contracttests.DeliveredStore {
		store, err := pgoutbox.NewStore(testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun, pgoutbox.Config{})
		require.NoError(t, err)
		return store
	})
}
