// Package sweep is part of the service floor (with core/relay and
// core/configsvc): background sweeps over the tables the domains register,
// reaching the world only through core/ports and taking time from
// ports.Clock. apps/relay runs them; each embeds a startstop.Periodic for
// its Start and Stop.
//
//   - TaskRecovery returns tasks whose worker crashed (lease expired) to
//     Pending and delivers each again, for every registered
//     ports.TaskTable. Without it a task whose queue message was lost
//     (Redis failover, a deleted or archived task) would stay 处理中
//     forever.
//   - IdempotencyRetention clears idempotency records (key, fingerprint,
//     stored response) older than a window, default
//     DefaultIdempotencyRetention (7 days, the standards' TTL rule), for
//     every registered ports.IdempotencyTable, keeping the business rows.
//     A request that repeats an expired key is a new request.
//
// Each setting has one default and one range, declared here; the relay's
// environment parsing reuses them.
package sweep
