package devices_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"
)

const openAPIPath = "../../docs/openapi.yaml"

var (
	contractOnce   sync.Once
	contractRouter routers.Router
	contractErr    error
)

// requireDocumented fails t unless res is a documented answer (status,
// headers and body) of the operation of req, as apps/api's contract test
// checks once this domain is wired. Every request of these tests goes
// through it.
func requireDocumented(t *testing.T, req *http.Request, res *http.Response, body []byte) {
	t.Helper()
	contractOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile(openAPIPath)
		if err == nil {
			err = doc.Validate(loader.Context)
		}
		if err == nil {
			doc.Servers = nil // any host: the test server has a random port
			contractRouter, err = gorillamux.NewRouter(doc)
		}
		contractErr = err
	})
	require.NoError(t, contractErr, "load %s", openAPIPath)
	route, params, err := contractRouter.FindRoute(req)
	require.NoError(t, err, "%s %s is not in %s", req.Method, req.URL.Path, openAPIPath)
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 res.StatusCode,
		Header:                 res.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	require.NoError(t, openapi3filter.ValidateResponse(context.Background(), in),
		"%s %s -> %d does not match %s: %.300s", req.Method, req.URL.Path, res.StatusCode, openAPIPath, body)
}

// The shared contract document still loads and validates with this
// domain's paths and schemas in it.
func TestOpenAPIDocumentsTheRoutes(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(openAPIPath)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context))

	for path, method := range map[string]string{
		"/api/v1/device-assignments":                    "POST",
		"/api/v1/device-assignments/{task_id}":          "GET",
		"/api/v1/device-assignments/{task_id}/failures": "GET",
		"/api/v1/device-assignments/{task_id}/cancel":   "POST",
	} {
		item := doc.Paths.Find(path)
		require.NotNil(t, item, "path %s is not documented", path)
		require.NotNil(t, item.GetOperation(method), "%s %s is not documented", method, path)
	}
	for _, name := range []string{"DeviceAssignmentTask", "DeviceAssignmentCreated", "DeviceAssignmentFailurePage", "DeviceAssignmentUpload"} {
		require.Contains(t, doc.Components.Schemas, name)
	}
}
