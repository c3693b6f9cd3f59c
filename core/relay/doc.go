// Package relay is part of the service floor: the use cases between the
// rule packages (core/outbox, core/lease, ...) and the binaries. Use cases
// reach the world only through core/ports; apps/ only assemble adapter
// Modules and these services, and a new use case (a sweeper, an operator
// command) goes here or in another service-floor package
// (core/configsvc), never into package main.
//
// Its use cases:
//
//   - Relay moves committed outbox events to the task queue: N claim loops
//     lease due rows in small batches, publish their envelopes
//     concurrently, then complete or fail the whole batch in one write
//     each; a recovery sweep takes back rows whose lease expired (a crashed
//     relay), counting the lost lease as a failed attempt: Pending again
//     after the backoff with the same event_id, or Failed (LEASE_EXPIRED)
//     when that was the last attempt, so an event that kills every relay
//     holding it ends instead of being claimed forever.
//   - DeadLetter records a consumer's final failure beside the event's row
//     (the row stays delivered), so an operator can replay it after the
//     queue's archive is gone.
//   - Operator replays failed or stuck events (deleting the queue's
//     retained task inside the replay) and releases dead relays' leases,
//     each change audited in the same transaction.
//   - Retention deletes old delivered events in small batches (on
//     startstop.Periodic, like every periodic job of the floor).
//   - Reconciler follows every delivered event until a consumer records
//     it, and publishes again those the queue lost; loss signals (a
//     restart, a flush, an eviction, a Sentinel master switch) start a
//     pass at once.
//
// Delivery is at least once. A relay that dies after publishing but before
// completing leaves a Delivering row whose lease expires; another relay
// publishes the same event_id again and the queue absorbs or re-delivers it,
// so consumers stay idempotent on event_id or their own business keys.
//
// Each tuning setting has one default and one range, declared in
// config.go; the relay binary's environment and the registered
// system-config keys (configsvc.TemplateSpecs) reuse them.
package relay
