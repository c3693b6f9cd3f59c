// Package apitest holds the HTTP test helpers every API test harness
// shares: bearer tokens, requests against a running server, the decoded
// error envelope and the check of an answer against docs/openapi.yaml.
//
// Import it from _test.go files only; the servers under test come from
// adapters/http/apiserver.
package apitest
