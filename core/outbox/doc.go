// Package outbox holds the pure rules of the public transactional outbox
// (tb_outbox_event): the event model and its constructor, the public envelope
// the relay hands to the queue, the four-state relay lifecycle, capped
// exponential backoff, error classification, the attempt policy, lease rules
// for claiming, completing, failing and recovering rows, and controlled replay.
//
// Nothing here does I/O or reads a clock: time, ids and randomness come in as
// arguments. Stores persist what these functions return and repeat the same
// conditions (status, lease owner, fencing token) in their WHERE clauses.
//
// "Failed" means the relay needs an operator: it could not enqueue the
// event (Fail with a final decision), or every relay that held it died
// before finishing (Recover on its last attempt, CodeLeaseExpired). Replay
// makes it Pending again under the same event_id. A consumer that gives up
// on a delivered event does not change the row: that is a
// ConsumerFailureRecord, kept apart and replayed through the queue.
//
// The event_id is set once by the business transaction and never changes: a
// retry, a recovery and a replay all keep it, so consumers must be idempotent.
package outbox
