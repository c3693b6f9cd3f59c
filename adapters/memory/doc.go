// Package memory holds in-memory implementations of the core's storage and
// queue ports, for fast unit tests of business code. Each one passes the
// same contract suite in contracttests/ as the real adapter, so a test that
// passes against memory makes the same assumptions the real adapter keeps.
//
// They apply the core rules (core/outbox, core/lease, ...) to maps behind a
// mutex. What memory cannot honour (a process crash, a real network outage)
// is declared through the suites' capability flags, not skipped silently.
package memory
