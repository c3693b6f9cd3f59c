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
// "Failed" means the event needs an operator: the relay could not enqueue
// it (Fail with a final decision), every relay that held it died before
// finishing (Recover on its last attempt, CodeLeaseExpired), or its consumer
// gave up after the relay delivered it (ConsumerFailed). Either way Replay
// makes it Pending again under the same event_id.
//
// The event_id is set once by the business transaction and never changes: a
// retry, a recovery and a replay all keep it, so consumers must be idempotent.
package outbox
