package redis

import (
	"crypto/tls"
	"net"

	"github.com/redis/rueidis"

	"github.com/july/template/core/redisurl"
)

// ClientOption is the rueidis configuration for a REDIS_URL topology. A
// single node is forced to rueidis' single-node client, which is handed
// back (and redials) even when the first dial fails, so the API starts
// while Redis is down. Sentinel and Cluster clients need their topology
// at start: rueidis refuses to build one it cannot discover.
func ClientOption(t redisurl.Topology) rueidis.ClientOption {
	opt := rueidis.ClientOption{
		InitAddress:  t.Addrs,
		Username:     t.Username,
		Password:     t.Password,
		SelectDB:     t.DB,
		DisableCache: true, // no client-side tracking: invalidation is ours
	}
	if t.TLS {
		host, _, _ := net.SplitHostPort(t.Addrs[0])
		opt.TLSConfig = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	switch t.Mode {
	case redisurl.Single:
		opt.ForceSingleClient = true
	case redisurl.Sentinel:
		opt.Sentinel = rueidis.SentinelOption{MasterSet: t.MasterName, Password: t.SentinelPassword}
	case redisurl.Cluster:
		// Found through the seeds; rueidis follows MOVED and ASK itself.
	}
	return opt
}
