//go:build testdomain

package domains

import "github.com/july/template/apps/internal/testdomain"

// Binaries built with -tags testdomain (the foundation's end-to-end
// tests, the pooler check and the DR drill) also run the test-only
// domain, so they test the foundation whatever domains the service has.
func init() { Include(testdomain.Domain()) }
