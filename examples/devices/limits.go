package devices

import (
	"context"
	"fmt"

	"github.com/july/template/core/sysconfig"
)

// The domain's config keys: the upload quotas. Each bounds how
// much work and storage one caller can cause; an operator tunes them with
// PUT /api/v1/system-configs/{key} without a release.
const (
	// KeyMaxRows bounds the data rows of one file; more is 422
	// DEVICE_FILE_TOO_MANY_ROWS at upload, before anything is stored.
	KeyMaxRows = "devices.upload.max_rows"
	// KeyMaxStoredFailures bounds the failure details stored per task: the
	// first ones in file order are kept, the rest only counted
	// (failed_count, and not_stored_count in the failures listing).
	KeyMaxStoredFailures = "devices.upload.max_stored_failures"
	// KeyUploadsPerMinute bounds the uploads one principal may start in
	// any 60 seconds; more is 429 DEVICE_UPLOAD_RATE_LIMITED with
	// Retry-After. It is counted in Postgres (the principal's tasks created
	// in the window), so it holds across api replicas.
	KeyUploadsPerMinute = "devices.upload.per_minute"
)

// The keys' defaults, used too when no config service is wired.
const (
	DefaultMaxRows           = 10_000
	DefaultMaxStoredFailures = 1_000
	DefaultUploadsPerMinute  = 10
)

// limitSpecs are the keys' one declaration: default and range.
var limitSpecs = []struct {
	key     string
	def, hi int64
	desc    string
}{
	{KeyMaxRows, DefaultMaxRows, 100_000, "单个设备分配文件的数据行数上限（%d-%d），超过时上传返回 422"},
	{KeyMaxStoredFailures, DefaultMaxStoredFailures, 100_000, "每个设备分配任务保存的失败明细上限（%d-%d），其余只计数"},
	{KeyUploadsPerMinute, DefaultUploadsPerMinute, 1_000, "每个用户每分钟可发起的设备分配上传次数（%d-%d），超过时返回 429"},
	{KeyFileRetentionHours, DefaultFileRetentionHours, 8_760, "已结束的设备分配任务保留上传文件的小时数（%d-%d），之后文件内容被清除"},
}

// ConfigSpecs returns the domain's config keys. The service registers them
// once (apps/internal/domains), so the API validates updates against them
// and `migrate backfill seed-system-config` seeds their defaults.
func ConfigSpecs() []sysconfig.Spec {
	specs := make([]sysconfig.Spec, len(limitSpecs))
	for i, l := range limitSpecs {
		lo, hi := int64(1), l.hi
		specs[i] = sysconfig.Spec{
			Key: l.key, Module: "devices", Type: sysconfig.TypeInt,
			Default: fmt.Sprint(l.def), Min: &lo, Max: &hi,
			Description: fmt.Sprintf(l.desc, lo, hi),
		}
	}
	return specs
}

// ConfigReader reads a registered config value; *configsvc.Service is one.
type ConfigReader interface {
	Value(ctx context.Context, key string) (sysconfig.Value, error)
}

// configured returns key's configured value, or def when r is nil (no
// config service wired, as in some tests). Call it before a transaction,
// never inside one: the read may ask Redis or take a second pooled
// connection. A registered key's read does not fail (the default or the
// last verified value stands in during outages), so an error is a wiring
// bug.
func configured(ctx context.Context, r ConfigReader, key string, def int64) (int64, error) {
	if r == nil {
		return def, nil
	}
	v, err := r.Value(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("devices: read %s: %w", key, err)
	}
	return v.Int(), nil
}
