package main

import (
	"context"
	"io/fs"

	"github.com/uptrace/bun"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/apps/internal/domains"
	"github.com/july/template/apps/internal/testdomain"
)

// The relay's tests run the foundation's test-only domain beside the
// service's, whatever domains the service has: in process here (app.go
// read domains.All into appDomains before any init ran, so it is added
// there too), and in the binaries the harness builds with -tags
// testdomain.
func init() {
	domains.Include(testdomain.Domain())
	appDomains = append(appDomains, testdomain.Domain())
}

// migrateDomains migrates a test database with the foundation's and every
// domain's migrations: the tables the in-process relay's domains use.
func migrateDomains(ctx context.Context, db *bun.DB) error {
	var sets []fs.FS
	for _, s := range domains.MigrationSets() {
		sets = append(sets, s.FS)
	}
	return postgres.MigrateWith(sets...)(ctx, db)
}
