package apitest

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"
)

// Contract is docs/openapi.yaml, loaded and validated once per process.
type Contract struct {
	// Doc is the document, servers included.
	Doc *openapi3.T
	// Path is the document's file.
	Path   string
	router routers.Router
}

var (
	contractOnce sync.Once
	contract     *Contract
	contractErr  error
)

// OpenAPI returns the repository's docs/openapi.yaml, failing t unless it
// loads and validates.
func OpenAPI(t testing.TB) *Contract {
	t.Helper()
	contractOnce.Do(func() { contract, contractErr = loadContract() })
	require.NoError(t, contractErr, "load and validate docs/openapi.yaml")
	return contract
}

func loadContract() (*Contract, error) {
	// The one YAML answer is /openapi.yaml: YAML text, declared as a string
	// (what Prism and other validators check). kin-openapi would parse it
	// into an object first; compare the text instead.
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.FileBodyDecoder)
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "openapi.yaml")
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, err
	}
	servers := doc.Servers
	doc.Servers = nil // match any host: test servers listen on a random port
	router, err := gorillamux.NewRouter(doc)
	doc.Servers = servers
	if err != nil {
		return nil, err
	}
	return &Contract{Doc: doc, Path: path, router: router}, nil
}

// Check fails t unless res is a documented answer of its request's
// operation: the status must be listed, and the headers and body must
// match its schemas. It returns the documented path, e.g.
// "/api/v1/topups/{id}".
func (c *Contract) Check(t testing.TB, res Response) string {
	t.Helper()
	hr := res.Request
	require.NotNil(t, hr, "a response from Do or Send")
	route, params, err := c.router.FindRoute(hr)
	require.NoError(t, err, "%s %s is not in docs/openapi.yaml", hr.Method, hr.URL.Path)
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: hr, PathParams: params, Route: route},
		Status:                 res.Status,
		Header:                 res.Header,
		Body:                   io.NopCloser(bytes.NewReader([]byte(res.Body))),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	require.NoError(t, openapi3filter.ValidateResponse(context.Background(), in),
		"%s %s -> %d does not match docs/openapi.yaml: %.300s", hr.Method, hr.URL.Path, res.Status, res.Body)
	return route.Path
}
