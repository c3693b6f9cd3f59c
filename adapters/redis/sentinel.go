package redis

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/redisurl"
)

// SwitchMasterChannel is the Sentinel channel announcing a failover:
// "<master name> <old ip> <old port> <new ip> <new port>".
const SwitchMasterChannel = "+switch-master"

// MasterSwitchWatcher is the ports.MasterSwitchWatcher of a Sentinel
// topology: it subscribes to SwitchMasterChannel on its sentinels.
type MasterSwitchWatcher struct {
	topo redisurl.Topology
	log  *slog.Logger
}

var _ ports.MasterSwitchWatcher = (*MasterSwitchWatcher)(nil)

// NewMasterSwitchWatcher returns the watcher of t's master. t must be a
// Sentinel topology (redis-sentinel://) with at least one sentinel: a
// single node has no failover and a cluster's is coordinated.
func NewMasterSwitchWatcher(t redisurl.Topology, log *slog.Logger) (*MasterSwitchWatcher, error) {
	if t.Mode != redisurl.Sentinel || len(t.Addrs) == 0 || t.MasterName == "" {
		return nil, errors.New("redis: NewMasterSwitchWatcher needs a redis-sentinel:// topology with a master name and at least one sentinel")
	}
	if log == nil {
		log = slog.Default()
	}
	return &MasterSwitchWatcher{topo: t, log: log}, nil
}

// WatchMasterSwitch subscribes to the sentinels (one at a time, moving to
// the next when one drops, a second apart) and calls onSwitch with the new
// master's address each time Sentinel fails the master over. It returns
// when ctx ends. A switch announced while no sentinel connection is up is
// missed: the caller's window should cover the reconnect delay.
func (w *MasterSwitchWatcher) WatchMasterSwitch(ctx context.Context, onSwitch func(newMaster string)) {
	t, log := w.topo, w.log
	for i := 0; ctx.Err() == nil; i++ {
		addr := t.Addrs[i%len(t.Addrs)]
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true,
			DisableCache: true, Password: t.SentinelPassword, Dialer: net.Dialer{Timeout: time.Second}})
		if err == nil {
			err = client.Receive(ctx, client.B().Subscribe().Channel(SwitchMasterChannel).Build(), func(m rueidis.PubSubMessage) {
				f := strings.Fields(m.Message)
				if len(f) == 5 && f[0] == t.MasterName {
					onSwitch(f[3] + ":" + f[4])
				}
			})
		}
		if client != nil {
			client.Close()
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("sentinel subscription lost; trying the next sentinel", "component", "redis-sentinel", "sentinel", addr, "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
