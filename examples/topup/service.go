package topup

import (
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/core/ports"
)

// Actor is who runs a use case: the authenticated caller, as the inbound
// adapter (HTTP, a CLI, a consumer) knows it. Every use case takes one, so
// authorization (roles, ownership) is decided here, in one place, and not
// in each adapter. The agent whose wallet is topped up is the actor's
// Subject.
type Actor struct {
	// Subject is the caller's stable id (the token's "sub"); required.
	Subject string
	// Roles are the caller's role names.
	Roles []string
}

// errNoActor is a wiring bug: an adapter called a use case without the
// authenticated caller.
var errNoActor = errors.New("topup: use case called without an actor")

// ServiceConfig configures NewService.
type ServiceConfig struct {
	// DB is the pool the use cases open their transactions on. Required.
	DB *bun.DB
	// PayLinks makes the orders' payment links. Required.
	PayLinks *PayLinks
	// Clock stamps orders. Default: time.Now.
	Clock ports.Clock
	// Config reads KeyMaxAmountCents for each create (*configsvc.Service
	// of a registry holding ConfigSpecs). Nil: only MaxAmountCents applies.
	Config ConfigReader
}

// Service is the domain's application layer: one method per use case
// (Create, Order, Wallet), each a transaction script that owns its
// transaction. Inbound adapters (the HTTP handlers in api.go, a CLI, a
// test) only translate to and from these calls; none of them opens a
// transaction or runs a query.
type Service struct {
	db     *bun.DB
	links  *PayLinks
	clock  ports.Clock
	config ConfigReader
}

// NewService returns the use cases; it fails on a missing DB or PayLinks.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.DB == nil || cfg.PayLinks == nil {
		return nil, errors.New("topup: ServiceConfig needs DB and PayLinks")
	}
	if cfg.Clock == nil {
		cfg.Clock = ports.ClockFunc(time.Now)
	}
	return &Service{db: cfg.DB, links: cfg.PayLinks, clock: cfg.Clock, config: cfg.Config}, nil
}
