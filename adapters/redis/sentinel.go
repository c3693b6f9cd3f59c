package redis

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/july/template/core/redisurl"
)

// SwitchMasterChannel is the Sentinel channel announcing a failover:
// "<master name> <old ip> <old port> <new ip> <new port>".
const SwitchMasterChannel = "+switch-master"

// WatchMasterSwitch subscribes to the sentinels of t (one at a time,
// moving to the next when one drops) and calls onSwitch with the new
// master's address each time Sentinel fails t's master over. It returns
// when ctx ends. A switch announced while no sentinel connection is up is
// missed: the caller's window should cover the reconnect delay.
func WatchMasterSwitch(ctx context.Context, t redisurl.Topology, log *slog.Logger, onSwitch func(newMaster string)) {
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
