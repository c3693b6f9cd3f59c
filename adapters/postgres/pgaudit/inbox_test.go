package pgaudit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgaudit"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
)

func TestAuditInboxContract(t *testing.T) {
	t.Parallel()

	contracttests.RunAuditInbox(t, func(t *testing.T) contracttests.AuditInboxFixture {
		db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
		in, err := pgaudit.NewInbox(db.Bun)
		require.NoError(t, err)
		return contracttests.AuditInboxFixture{
			Inbox: in,
			Outage: func(t *testing.T, _ ports.AuditInbox) (ports.AuditInbox, func()) {
				down, err := pgaudit.NewInbox(testinfra.UnreachableDB(t))
				require.NoError(t, err)
				return down, func() {}
			},
		}
	})
}
