package topup_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/examples/topup"
)

// The domain's config key is read by its create command: an operator
// lowers the limit and a larger top-up is refused with 422, while a retry
// of an accepted top-up still replays.
func TestCreateReadsTheConfiguredLimit(t *testing.T) {
	t.Parallel()

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.MigrateWith(topup.MigrationsFS)}).Bun
	reg := sysconfig.NewRegistry()
	require.NoError(t, reg.Register(topup.ConfigSpecs()...))
	store, err := pgconfig.NewStore(db, pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{}))
	require.NoError(t, err)
	svc, err := configsvc.New(reg, store, nil, ports.SystemClock, configsvc.Options{})
	require.NoError(t, err)
	e := newEnv(t, envOpts{config: svc})

	body := `{"amount_cents":1000,"channel":"wechat"}`
	require.Equal(t, 201, e.create(t, "agent-1", "topup-limit-0001", body).Status, "the default limit allows 1000")

	_, err = svc.Update(t.Context(), sysconfig.UpdateRequest{Key: topup.KeyMaxAmountCents, Raw: json.RawMessage(`500`), Actor: "admin-1"}, configsvc.Meta{})
	require.NoError(t, err)

	r := e.create(t, "agent-1", "topup-limit-0002", body)
	require.Equal(t, 422, r.Status, r.Body)
	require.Equal(t, topup.CodeAmountInvalid, r.Error.Code)
	require.Len(t, r.Error.Details, 1)
	require.Equal(t, "amount_cents", r.Error.Details[0].Field)
	require.Contains(t, r.Body, "500", "the message names the limit")
	require.Contains(t, r.Error.Message, "上限", "rule: the message says the limit was exceeded")
	require.NotContains(t, r.Error.Message, "大于 0", "rule: an over-limit amount is not told it must be positive")
	require.Contains(t, r.Error.Details[0].Reason, "500", "the detail names the configured limit")

	require.Equal(t, 201, e.create(t, "agent-1", "topup-limit-0003", `{"amount_cents":500,"channel":"wechat"}`).Status, "at the limit is allowed")
	replay := e.create(t, "agent-1", "topup-limit-0001", body)
	require.Equal(t, 201, replay.Status, "an accepted top-up replays after the limit is lowered: %s", replay.Body)
	require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
}
