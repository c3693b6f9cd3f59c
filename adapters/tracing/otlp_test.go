package tracing_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/july/template/adapters/tracing"
)

// The standard variables drive the real exporter: OTEL_EXPORTER_OTLP_ENDPOINT
// gets OTLP/HTTP protobuf on /v1/traces, OTEL_SERVICE_NAME wins over the
// app's default name, OTEL_RESOURCE_ATTRIBUTES adds attributes.
func TestOTLPExportFollowsTheEnvironment(t *testing.T) {
	var mu sync.Mutex
	var got []*coltrace.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &coltrace.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "unexpected export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "from-env")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=staging")

	p, err := tracing.New(t.Context(), tracing.Config{Service: tracing.Service{Name: "api"}, Getenv: os.Getenv})
	require.NoError(t, err)
	require.True(t, p.Enabled())
	_, span := p.Tracer("t").Start(t.Context(), "exported")
	span.End()
	require.NoError(t, p.Shutdown(t.Context()), "shutdown flushes the batch")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1)
	rs := got[0].GetResourceSpans()[0]
	res := map[string]string{}
	for _, kv := range rs.GetResource().GetAttributes() {
		res[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	require.Equal(t, "from-env", res["service.name"])
	require.Equal(t, "staging", res["deployment.environment.name"])
	require.NotEmpty(t, res["service.instance.id"])
	require.Equal(t, "exported", rs.GetScopeSpans()[0].GetSpans()[0].GetName())
}
