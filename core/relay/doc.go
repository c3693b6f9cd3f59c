// Package relay moves committed outbox events to the task queue: N claim
// loops lease due rows in small batches, publish their envelopes
// concurrently, then complete or fail the whole batch in one write each; a
// recovery sweep returns rows whose lease expired (a crashed relay) to
// Pending with the same event_id.
//
// Delivery is at least once. A relay that dies after publishing but before
// completing leaves a Delivering row whose lease expires; another relay
// publishes the same event_id again and the queue absorbs or re-delivers it,
// so consumers stay idempotent on event_id or their own business keys.
//
// The relay reaches the world only through ports: an OutboxRelayStore, a
// Publisher, a Clock and a source of randomness for backoff jitter.
package relay
