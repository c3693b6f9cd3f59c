// Package sysconfig holds the pure rules of the controlled system-config
// registry (table tb_system_config; its columns are a public contract,
// docs/architecture.md).
//
// Only keys registered in code may be written. Each module registers its own
// keys with a [Spec] (type, default, value range, read-only and sensitive
// flags, UI hint); a [Registry] rejects duplicate keys, type clashes, bad key
// names and invalid defaults at start-up, never silently overriding.
//
// Keys are named module.group.name: exactly three dot-separated segments,
// each a lowercase letter followed by lowercase letters, digits or
// underscores (see [KeyPattern]). The first segment is the owning module.
//
// The package does no I/O. Adapters feed it stored rows ([Stored]) and HTTP
// bodies and get back decisions: [PlanUpdate] runs the update checks in a
// fixed order (registration, read-only, type, constraints, version) and
// yields the row to write plus the accepted [UpdateDecision];
// [RejectedDecision] yields the decision recorded for a refused attempt;
// [ViewOf] renders a masked row for the API; [Resolve] picks the value a reader
// should use when the stored one is missing or broken.
//
// Sensitive values never leave the package unmasked except through
// [Value.Text] and the typed accessors: views, audit records, errors,
// alerts, fmt and slog output all show [Mask] instead.
package sysconfig
