package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/july/template/core/ports"
)

// ProbeTimeout bounds each readiness probe run for dependency_up.
const ProbeTimeout = 2 * time.Second

// Component names the binary in dependency_up's component label, e.g.
// "api" or "relay"; the app supplies it (fx.Supply) for ProbeModule.
type Component string

// probeCollector runs the app's readiness probes at scrape time (at most
// once per second, each bounded by ProbeTimeout) and exports
// dependency_up{component,dependency}: 1 while the dependency answers.
type probeCollector struct {
	component string
	probes    []ports.Probe
	clock     ports.Clock
	desc      *prometheus.Desc

	mu     sync.Mutex
	last   []float64
	lastAt time.Time
}

// RegisterProbes registers dependency_up on reg for probes.
func RegisterProbes(reg prometheus.Registerer, component Component, probes []ports.Probe, clock ports.Clock) error {
	return reg.Register(&probeCollector{
		component: string(component), probes: probes, clock: clock,
		desc: prometheus.NewDesc("dependency_up",
			"1 when the dependency's readiness probe answers within 2s, 0 when it does not (read at scrape time).",
			[]string{"component", "dependency"}, nil),
	})
}

// Describe implements prometheus.Collector.
func (c *probeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *probeCollector) Collect(ch chan<- prometheus.Metric) {
	for i, up := range c.snapshot() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, up, c.component, c.probes[i].Name)
	}
}

func (c *probeCollector) snapshot() []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if c.last != nil && now.Sub(c.lastAt) < time.Second {
		return c.last
	}
	ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
	defer cancel()
	type result struct {
		i  int
		up bool
	}
	results := make(chan result, len(c.probes))
	for i, p := range c.probes {
		go func() {
			ok := false
			defer func() {
				_ = recover() // a panicking probe counts as down
				results <- result{i, ok}
			}()
			ok = p.Check(ctx) == nil
		}()
	}
	up := make([]float64, len(c.probes))
wait:
	for range c.probes {
		select {
		case r := <-results:
			if r.up {
				up[r.i] = 1
			}
		case <-ctx.Done(): // probes still running count as down
			break wait
		}
	}
	c.last, c.lastAt = up, now
	return up
}
