package main

import (
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/release"
)

// migrationSets are applied in this order. A clone adds its domains' sets
// here (each domain owns its tables; versions must be unique).
func migrationSets() []release.Set {
	return []release.Set{release.Foundation()}
}

// configSeeds are the registered system-config keys with their defaults.
// TODO(lead): take from the sysconfig registry
var configSeeds = []postgres.ConfigSeed{
	{Key: "relay.delivery.batch_size", Value: "100", Type: "int", Module: "relay", Description: "Relay 每轮领取的 Outbox 事件数量上限"},
	{Key: "relay.delivery.lease_ttl_seconds", Value: "30", Type: "int", Module: "relay", Description: "Relay 领取事件后的租约时长（秒），超时后可被其他实例恢复"},
	{Key: "relay.delivery.max_attempts", Value: "12", Type: "int", Module: "relay", Description: "事件投递最大尝试次数，超过后标记为投递失败"},
	{Key: "http.access_log.body_cap_bytes", Value: "51200", Type: "int", Module: "http", Description: "Access Log 记录请求/响应体的最大字节数，超出部分截断并标记"},
}

// backfills are the data migrations `migrate backfill NAME` can run.
func backfills() []release.Backfill {
	return []release.Backfill{release.SeedSystemConfig(configSeeds)}
}
