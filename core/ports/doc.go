// Package ports declares what the core needs from the outside world, named
// for the need rather than the technology: interfaces, their parameter
// structs and the errors they return. It holds no logic.
//
// Adapters in adapters/ implement these interfaces; the reusable suites in
// contracttests/ check every implementation against the contracts written
// on each method, so those sentences are the specification.
package ports
