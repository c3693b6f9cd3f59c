// Package topup is a reference business domain: an agent tops up its
// wallet. It shows a July service how to use the foundation end to end:
//
//   - POST /api/v1/topups is an idempotent create command (idemhttp +
//     pgidem.Insert): Service.Create, in ONE bun transaction, reserves the
//     caller's key on the order row, inserts the order, appends the
//     topup.created outbox event and stores the response for replays;
//   - the relay delivers topup.created to Credit, which credits the wallet
//     at most once per order: a unique ledger entry per order, the wallet's
//     version lock (pgidem.UpdateVersioned) and a conditional state move
//     (pgidem.Transition), all in one transaction, so duplicate
//     deliveries change nothing;
//   - GET /api/v1/topups/{id} and GET /api/v1/wallets/me read the results;
//   - the order's pay_url is a private payment link: the routes that carry
//     it log bodies under redaction.PolicyPayment (AccessRoutes).
//
// Layers: Service (service.go, create.go, query.go) is the application
// layer, one method per use case taking the caller as an Actor; each is a
// transaction script that opens its own transaction and reads config
// before it. API (api.go) is the inbound HTTP adapter: it maps a request
// to a Service call and the result to a response, and never opens a
// transaction or runs a query (internal/layout checks it). A CLI
// or a test calls the same Service without HTTP.
//
// Order states (ex_topup_order.status):
//
//	1 created  -- Credit -->  2 credited
//
// There is no other move; a created order waits for its credit (a real
// service would move it on the payment callback instead, with the same
// Transition).
//
// Wiring: Domain() (domain.go), one line in apps/internal/domains.All.
// Deleting the package and that line removes the example.
package topup
