package queue

import (
	"crypto/tls"
	"net"

	"github.com/hibiken/asynq"

	"github.com/july/template/core/redisurl"
)

// ConnOpt is Asynq's connection for a REDIS_URL topology: a single node,
// a master followed through Sentinel, or a Redis Cluster. Asynq keeps
// each queue's keys under one hash tag, so its scripts run in a cluster.
func ConnOpt(t redisurl.Topology) asynq.RedisConnOpt {
	var tc *tls.Config
	if t.TLS {
		host, _, _ := net.SplitHostPort(t.Addrs[0])
		tc = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	switch t.Mode {
	case redisurl.Sentinel:
		return asynq.RedisFailoverClientOpt{MasterName: t.MasterName, SentinelAddrs: t.Addrs, SentinelPassword: t.SentinelPassword,
			Username: t.Username, Password: t.Password, DB: t.DB, TLSConfig: tc}
	case redisurl.Cluster:
		return asynq.RedisClusterClientOpt{Addrs: t.Addrs, Username: t.Username, Password: t.Password, TLSConfig: tc}
	default:
		return asynq.RedisClientOpt{Addr: t.Addrs[0], Username: t.Username, Password: t.Password, DB: t.DB, TLSConfig: tc}
	}
}
