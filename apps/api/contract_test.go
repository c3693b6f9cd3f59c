package main

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

// openAPIPath is the published contract, relative to this package.
const openAPIPath = "../../docs/openapi.yaml"

// apiContract is docs/openapi.yaml loaded and validated once per process.
type apiContract struct {
	doc    *openapi3.T
	router routers.Router
}

var (
	contractOnce sync.Once
	contractDoc  *apiContract
	contractErr  error
)

func loadContract() (*apiContract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(openAPIPath)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	servers := doc.Servers
	doc.Servers = nil // match any host: the tests listen on a random port
	router, err := gorillamux.NewRouter(doc)
	doc.Servers = servers
	if err != nil {
		return nil, err
	}
	return &apiContract{doc: doc, router: router}, nil
}

func contract(t *testing.T) *apiContract {
	t.Helper()
	contractOnce.Do(func() { contractDoc, contractErr = loadContract() })
	require.NoError(t, contractErr, "load and validate %s", openAPIPath)
	return contractDoc
}

// check fails t unless the operation of hr is documented and res matches
// it: the status must be listed (IncludeResponseStatus), and the headers
// and body must match its schemas. It returns the documented path.
func (c *apiContract) check(t *testing.T, hr *http.Request, res response) string {
	t.Helper()
	route, params, err := c.router.FindRoute(hr)
	require.NoError(t, err, "%s %s is not in %s", hr.Method, hr.URL.Path, openAPIPath)
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: hr, PathParams: params, Route: route},
		Status:                 res.status,
		Header:                 res.header,
		Body:                   io.NopCloser(bytes.NewReader([]byte(res.body))),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	require.NoError(t, openapi3filter.ValidateResponse(context.Background(), in),
		"%s %s -> %d does not match %s: %s", hr.Method, hr.URL.Path, res.status, openAPIPath, res.body)
	return route.Path
}
