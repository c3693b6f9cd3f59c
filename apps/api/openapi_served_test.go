package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
)

// GET /openapi.yaml serves exactly the committed contract, without a token.
func TestOpenAPIDocumentIsServed(t *testing.T) {
	t.Parallel()

	a := startAPI(t, appOpts{})
	want, err := os.ReadFile("../../docs/openapi.yaml")
	require.NoError(t, err)
	r := a.do(t, apitest.Request{Method: "GET", Path: "/openapi.yaml"})
	require.Equal(t, 200, r.Status)
	require.Equal(t, "application/yaml", r.Header.Get("Content-Type"))
	require.Equal(t, string(want), r.Body)
}
