// Package domains is the service's home for its business domains: one
// directory each (domains/orders, domains/cards), and All, the one list of
// them. The foundation (apps/internal/domains) reads this list; apps/api
// serves their routes, apps/relay runs their consumers and sweeps,
// apps/migrate applies their migration sets in list order.
//
// This directory is the service's own: make template-update never writes
// here (template.lock). A domain imports core, adapters and the seam
// apps/domain, never another domain or a binary (internal/layout).
package domains

import (
	"github.com/july/template/apps/domain"
	"github.com/july/template/examples/devices"
	"github.com/july/template/examples/topup"
)

// All is every domain of the service, one line each, in the order
// migrate applies their sets.
// (make remove-examples deletes the examples' two lines and this one.)
func All() []domain.Domain {
	return []domain.Domain{
		// Your domains, one line each, e.g. orders.Domain(),
		topup.Domain(),
		devices.Domain(),
	}
}
