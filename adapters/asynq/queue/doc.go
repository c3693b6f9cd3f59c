// Package queue is the Asynq adapter: it enqueues tasks and outbox
// envelopes, and runs the worker that decodes them for consumers.
//
// Producing:
//
//   - Publisher.EnqueueTask enqueues a service task. The payload must be a
//     struct, a pointer to a struct or a map with string keys; it is
//     marshalled exactly once. []byte, json.RawMessage, strings, numbers and
//     nil are refused with a *PayloadError, because passing pre-encoded
//     bytes is how payloads end up marshalled twice (a Base64 string).
//   - Publisher.Publish implements ports.Publisher for the outbox relay. The
//     task type is the event_type, the asynq task id is the event_id and
//     the payload is the envelope, so a re-delivery while the first copy is
//     still retained (Config.Retention) is absorbed by asynq.
//
// Consuming: NewMux builds an asynq.ServeMux from Consumers. Every envelope
// consumer runs behind EnvelopeMiddleware, which decodes the envelope,
// refuses malformed payloads without retrying, and puts the envelope and a
// logger carrying request_id, correlation_id, event_id and event_type into
// the context (EnvelopeFrom, LoggerFrom). Handle decodes the payload into a
// typed struct; a handler error that outbox.Classify calls permanent stops
// the retries (the task is archived). A task that fails for good (retries
// exhausted or permanent) is passed to ServerConfig.DeadLetterFunc, which an
// app uses to record the failure durably (asynq trims its own archive).
//
// Wiring with fx: supply a ModuleConfig, include Module, and add
// consumers with one line each:
//
//	fx.New(
//		fx.Supply(queue.ModuleConfig{RedisURL: os.Getenv("REDIS_URL")}),
//		queue.Module,
//		fx.Provide(queue.AsConsumer(newOrderCreatedConsumer)), // func(...) queue.Consumer
//		queue.RunWorker, // only in the binary that processes tasks
//	)
//
// AsConsumer is shorthand for
// fx.Annotate(f, fx.ResultTags(`group:"asynq.consumers"`)).
package queue
