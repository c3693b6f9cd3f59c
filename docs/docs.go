// Package docs embeds the HTTP contract so apps/api serves the very file a
// test validates real responses against (GET /openapi.yaml).
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
