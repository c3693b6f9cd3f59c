package main

import (
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/apps/internal/testdomain"
)

// migrate's tests apply the foundation's test-only domain's set after
// the service's, so they test the release step on a domain whatever
// domains the service has.
func init() { domains.Include(testdomain.Domain()) }
