package topup

import (
	"errors"
	"fmt"
	"slices"
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

// Roles this domain reads from Actor.Roles (the token's "roles" claim).
// Each use case checks them first, before any lookup, so a refusal
// (ErrForbidden, 403) says nothing about whether an order exists. The
// names carry the domain ("topup."): a role of another domain (the
// devices admin) grants nothing here.
const (
	// RoleAgent may top up its own wallet (Create), read its own orders
	// (another agent's order is ErrNotFound, like a missing one) and read
	// its own wallet.
	RoleAgent = "topup.agent"
	// RoleAdmin may read any agent's order. It has no wallet and creates
	// no top-ups: a caller that needs both holds both roles.
	RoleAdmin = "topup.admin"
)

// ErrForbidden is returned when the actor lacks the role a use case
// needs (403 FORBIDDEN). It is decided from the roles alone, before any
// lookup.
var ErrForbidden = errors.New("topup: actor lacks the role this use case needs")

// HasRole reports whether the actor holds role.
func (a Actor) HasRole(role string) bool { return slices.Contains(a.Roles, role) }

// require is every use case's first step: the actor must be known and
// hold one of roles.
func (a Actor) require(roles ...string) error {
	if a.Subject == "" {
		return errNoActor
	}
	if slices.ContainsFunc(roles, a.HasRole) {
		return nil
	}
	return fmt.Errorf("%w (needs one of %v)", ErrForbidden, roles)
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
