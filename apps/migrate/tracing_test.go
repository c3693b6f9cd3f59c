package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/contracttests/testinfra"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, a command is one trace: the root
// span "migrate up" with the exit code, and its statements as children,
// flushed before the command returns.
func TestMigrateCommandIsOneTrace(t *testing.T) {
	var mu sync.Mutex
	var spans []string
	var roots int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &coltrace.ExportTraceServiceRequest{}
		if proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					spans = append(spans, s.GetName())
					if len(s.GetParentSpanId()) == 0 {
						roots++
					}
				}
			}
		}
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)

	db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db.URL
		}
		return os.Getenv(k)
	}
	require.Equal(t, exitOK, runWith(ctx, []string{"up"}, getenv, &out, &errb, foundation(), nil), errb.String())

	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, spans, "migrate up")
	require.Equal(t, 1, roots, "one trace per command; spans %v", spans)
	require.Greater(t, len(spans), 1, "the command's queries are its children")
}
