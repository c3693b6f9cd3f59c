// Package devices is the reference batch-task domain: device batch
// assignment from an uploaded CSV (UR#49), built only from the template's
// building blocks.
//
//   - POST /api/v1/device-assignments takes a multipart upload (field
//     "file", header device_sn,target_agent_id, at most 2 MiB) as an
//     idempotent create command (idemhttp, operation devices.assign; the
//     fingerprint covers the parsed parts, so a retry with the same file
//     and a new multipart boundary replays). Service.Upload's one short
//     transaction inserts the task row (which embeds the
//     idempotency record and the file), appends the outbox event
//     devices.assignment.requested {task_id} and stores the 202 response
//     {"task_id": ...}. The file is not parsed there: the request stays
//     short and bounded, and the parse runs under the task's lease.
//   - The relay delivers the event; Worker (the queue consumer) claims the
//     task with a lease, parses the file, and decides every row: valid rows
//     are upserted into ex_devices_assignment, invalid ones recorded in
//     ex_devices_failure with a stable code and a Chinese message. A file
//     that is not the template fails the task (TASK_FILE_UNPARSABLE);
//     otherwise the task completes, partial success being failed_count > 0.
//   - GET /api/v1/device-assignments/{task_id} renders the shared task DTO,
//     .../failures pages the failure details in file order, and
//     .../cancel cancels a Pending or Processing task (409
//     TASK_NOT_CANCELLABLE once finished). Another caller's task is 404
//     like a missing one.
//
// Recovery: a worker that dies mid-task leaves a Processing row whose lease
// expires; Asynq hands the task to another worker (its own lease on the
// running task expires too) and Claim takes the expired lease over, so the
// work resumes from the recorded progress. If the queue gives up on the
// task (retries exhausted), the relay records a consumer failure for its
// event (the durable dead letter; the event row stays delivered) and
// `relay outbox replay` restarts it.
//
// Layers: Service (service.go, upload.go) is the application layer, one
// method per use case taking the caller as an Actor, each owning its
// transaction; API (api.go) is the inbound HTTP adapter that maps requests
// to Service calls and never opens a transaction or runs a query
// (internal/layout checks it); Worker is the queue consumer.
//
// The upload route logs its body under redaction.PolicyFileTransfer: part
// names and sizes, never the CSV.
//
// Simplifications a real service would not make: the CSV is kept in the
// task row (bytea) instead of object storage, and target agents are checked
// for format only, not against an agent registry.
package devices
