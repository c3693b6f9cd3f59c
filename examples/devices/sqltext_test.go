package devices_test

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
)

// queryCapture is a bun.QueryHook that keeps the text of every query bun
// sends, its arguments inlined as bun formats them.
type queryCapture struct {
	mu      sync.Mutex
	queries []string
}

func (c *queryCapture) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *queryCapture) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries = append(c.queries, e.Query)
}

func (c *queryCapture) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.queries...)
}

// REGRESSION: bun inlines arguments into the query text, so an
// uploaded file stored through the model travelled as SQL text, and
// Postgres logged the whole statement, file included, when it failed. The
// upload stores the file as a bound parameter (storeFile): no query text
// carries the file, in clear or hex-encoded, neither as bun formats it nor
// as the server receives it. The server side is read by a trigger that
// keeps current_query() of every write to the task table: pgx's simple
// protocol, the pool's default, would inline a bound argument there too.
func TestUploadedFileNeverAppearsInQueryText(t *testing.T) {
	t.Parallel()
	v := newEnvOpts(t, envOpts{productionPool: true})
	capture := &queryCapture{}
	v.db.AddQueryHook(capture) //nolint:staticcheck // in place: the stores already hold v.db
	for _, q := range []string{
		`CREATE TABLE t_seen_query (q text NOT NULL)`,
		`CREATE FUNCTION t_seen_query() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN INSERT INTO t_seen_query VALUES (current_query()); RETURN NEW; END $$`,
		`CREATE TRIGGER t_seen_query BEFORE INSERT OR UPDATE ON ex_devices_task
		 FOR EACH ROW EXECUTE FUNCTION t_seen_query()`,
	} {
		_, err := v.db.ExecContext(t.Context(), q)
		require.NoError(t, err, q)
	}

	marker := "MRK" + strings.ToUpper(strings.ReplaceAll(uuid.NewString(), "-", ""))
	csv := "device_sn,target_agent_id\n" + marker[:20] + ",agent-1\nBB00000001," + strings.ToLower(marker) + "\n"
	r, id := v.upload(t, "user-sql", "upload-sqltext-01", csv)
	require.Equal(t, http.StatusAccepted, r.Status, "upload: %s", r.Body)

	var stored []byte
	require.NoError(t, v.db.NewSelect().Table("ex_devices_task").Column("file_content").
		Where("id = ?", id).Scan(t.Context(), &stored))
	require.Equal(t, csv, string(stored), "the file is stored whole")

	var received []string
	require.NoError(t, v.db.NewSelect().Table("t_seen_query").Column("q").Scan(t.Context(), &received))
	require.True(t, containsAnyOf(received, "file_content"), "the trigger saw the statement storing the file: %q", received)
	queries := append(capture.all(), received...)
	require.True(t, containsAnyOf(queries, "ex_devices_task"), "the hook saw the upload's queries: %q", queries)
	needles := []string{marker[:20], strings.ToLower(marker), hex.EncodeToString([]byte(csv)), hex.EncodeToString([]byte(marker[:20]))}
	for _, q := range queries {
		for _, n := range needles {
			require.NotContains(t, q, n, "the uploaded file reached the query text")
		}
	}
}

func containsAnyOf(qs []string, sub string) bool {
	for _, q := range qs {
		if strings.Contains(q, sub) {
			return true
		}
	}
	return false
}
