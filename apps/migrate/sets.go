package main

import (
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/release"
	"github.com/july/template/apps/internal/domains"
)

// migrationSets are applied in this order: the foundation's, then every
// domain's (apps/internal/domains.All; each domain owns its tables and
// versions must be unique).
func migrationSets() []release.Set {
	return append([]release.Set{release.Foundation()}, domains.MigrationSets()...)
}

// configSeeds are the registered system-config keys with their defaults,
// taken from the same registry the API enforces (the template's keys and
// every domain's, apps/internal/domains).
func configSeeds() []postgres.ConfigSeed {
	reg, err := domains.Registry()
	if err != nil {
		panic(err) // static specs: a failure is a programming error caught by tests
	}
	var seeds []postgres.ConfigSeed
	for _, module := range reg.Modules() {
		for _, s := range reg.List(module) {
			seeds = append(seeds, postgres.ConfigSeed{
				Key: s.Key, Value: s.Default, Type: string(s.Type), Module: s.Module,
				Description: s.Description, ReadOnly: s.ReadOnly,
			})
		}
	}
	return seeds
}

// backfills are the data migrations `migrate backfill NAME` can run.
func backfills() []release.Backfill {
	return []release.Backfill{release.SeedSystemConfig(configSeeds())}
}
