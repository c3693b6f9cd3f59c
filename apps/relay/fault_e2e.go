//go:build e2efault

package main

// A fault-injection consumer compiled only into the end-to-end tests' relay
// (go build -tags e2efault): it ends the process on an event whose payload
// asks for it, as an OOM kill or a crash in a consumer would.

import (
	"context"
	"os"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/apps/domain"
	"github.com/july/template/core/outbox"
)

// faultEvent is the payload of "e2e.fault" events.
type faultEvent struct {
	Crash bool `json:"crash"`
}

func init() {
	appDomains = append(appDomains, domain.Domain{Name: "e2e.fault", Relay: func(domain.RelayDeps) (domain.Relay, error) {
		return domain.Relay{Consumers: []queue.Consumer{{EventType: "e2e.fault", Handler: queue.Handle(func(_ context.Context, _ outbox.Envelope, p faultEvent) error {
			if p.Crash {
				os.Exit(3)
			}
			return nil
		})}}}, nil
	}})
}
