// Package idemhttp implements the HTTP side of idempotent create commands
// (the IETF httpapi Idempotency-Key draft; docs/architecture.md,
// "Idempotency record and decisions") for echo:
//
//   - the key is the client's Idempotency-Key header, else its X-Request-ID
//     as sent (CaptureKey keeps the raw value before httpx.RequestIDs
//     replaces a malformed or missing one);
//   - a create command without a key is 400 IDEMPOTENCY_KEY_MISSING, a
//     malformed key 400 IDEMPOTENCY_KEY_INVALID, checked before any lookup;
//   - the request body is fingerprinted (JSON canonically, multipart by its
//     parsed parts so a new boundary per send still matches, anything else
//     by its bytes), bound to the route's path parameters (a path that
//     names the resource makes another resource another command), and the
//     Key handed to the handler
//     (KeyFrom), which records it with its business row in its own
//     transaction (pgidem.Insert) and answers a duplicate with
//     Replay (same status and body, "Idempotent-Replayed: true");
//   - MapError renders a reused key as 422 IDEMPOTENCY_KEY_REUSED and a
//     first request still running as 409 IDEMPOTENCY_IN_PROGRESS
//     (retryable, "Retry-After: 1");
//   - an optional short guard (ports.Guard, Redis SET NX PX) turns
//     concurrent duplicates away early with 409. It only saves work: when
//     Redis is down or the guard expires, the database's unique constraint
//     still decides.
//
// Wiring:
//
//	e := httpx.NewServer(cfg, log, idemhttp.MapError)
//	e.Pre(idemhttp.CaptureKey()) // before httpx.RequestIDs rewrites X-Request-ID
//	idem, err := idemhttp.Middleware(idemhttp.Config{Operation: "order.create", Fingerprinter: fp, Guard: guard})
//	e.POST("/api/v1/orders", h.CreateOrder, authMW, idem)
package idemhttp
