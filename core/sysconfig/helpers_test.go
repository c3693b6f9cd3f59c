package sysconfig_test

import (
	"github.com/july/template/core/sysconfig"
)

const secret = "s3cr3t-token-value"

func i64(n int64) *int64 { return &n }

func spec(key string, typ sysconfig.Type, def string) sysconfig.Spec {
	module := key[:indexDot(key)]
	return sysconfig.Spec{Key: key, Module: module, Type: typ, Description: "测试配置", Default: def}
}

func indexDot(s string) int {
	for i := range s {
		if s[i] == '.' {
			return i
		}
	}
	return len(s)
}

// testRegistry registers one key of each kind used by the update and view tests.
func testRegistry() *sysconfig.Registry {
	reg := sysconfig.NewRegistry()
	limit := spec("pay.order.limit", sysconfig.TypeInt, "10")
	limit.Min, limit.Max = i64(1), i64(100)
	token := spec("pay.wechat.token", sysconfig.TypeString, "placeholder")
	token.Sensitive = true
	frozen := spec("pay.wechat.app_id", sysconfig.TypeString, "wx1")
	frozen.ReadOnly = true
	reg.MustRegister(limit, token, frozen, spec("pay.wechat.enabled", sysconfig.TypeBool, "false"))
	return reg
}
