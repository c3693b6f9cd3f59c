package configsvc

import (
	"fmt"
	"strconv"
	"time"

	"github.com/july/template/core/redaction"
	"github.com/july/template/core/relay"
	"github.com/july/template/core/sysconfig"
)

// The template's own keys, read by the relay and the API. A business
// module registers its keys the same way, in code, next to the code that
// reads them: the registry is the only place a writable key comes from.
const (
	KeyRelayBatchSize     = "relay.delivery.batch_size"
	KeyRelayLeaseTTL      = "relay.delivery.lease_ttl_seconds"
	KeyRelayMaxAttempts   = "relay.delivery.max_attempts"
	KeyAccessLogBodyBytes = "http.access_log.body_cap_bytes"
)

// Access-log body cap range; the default is redaction.DefaultMaxBytes.
const (
	MinAccessLogBodyBytes = 1024
	MaxAccessLogBodyBytes = redaction.DefaultMaxBytes
)

// TemplateSpecs returns the specs of the template's own keys. Defaults and
// ranges are the relay's and the redactor's own (one source each).
func TemplateSpecs() []sysconfig.Spec {
	lease := func(d time.Duration) int64 { return int64(d / time.Second) }
	return []sysconfig.Spec{
		intSpec(KeyRelayBatchSize, "relay", relay.DefaultBatchSize, relay.MinBatchSize, relay.MaxBatchSize,
			"Relay 每轮领取的 Outbox 事件数量上限（%d-%d）"),
		intSpec(KeyRelayLeaseTTL, "relay", lease(relay.DefaultLeaseFor), lease(relay.MinLeaseFor), lease(relay.MaxLeaseFor),
			"Relay 领取事件后的租约时长（秒，%d-%d），超时后可被其他实例恢复"),
		intSpec(KeyRelayMaxAttempts, "relay", relay.DefaultMaxAttempts, relay.MinMaxAttempts, relay.MaxMaxAttempts,
			"事件投递最大尝试次数（%d-%d），超过后标记为投递失败并告警"),
		intSpec(KeyAccessLogBodyBytes, "http", redaction.DefaultMaxBytes, MinAccessLogBodyBytes, MaxAccessLogBodyBytes,
			"Access Log 记录请求/响应体的最大字节数（%d-%d），先脱敏后截断并标记"),
	}
}

// RegisterTemplateKeys adds the template's keys to reg.
func RegisterTemplateKeys(reg *sysconfig.Registry) error { return reg.Register(TemplateSpecs()...) }

func intSpec[N ~int | ~int64](key, module string, def, lo, hi N, descFormat string) sysconfig.Spec {
	mn, mx := int64(lo), int64(hi)
	return sysconfig.Spec{
		Key: key, Module: module, Type: sysconfig.TypeInt, Default: strconv.FormatInt(int64(def), 10),
		Min: &mn, Max: &mx, Description: fmt.Sprintf(descFormat, mn, mx),
	}
}
