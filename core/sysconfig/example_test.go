package sysconfig_test

import (
	"encoding/json"
	"fmt"

	"github.com/july/template/core/sysconfig"
)

// A payment module registers its keys once at start-up; the API then plans
// each update against the registry.
func Example() {
	minOrder, maxOrder := int64(1), int64(500)
	reg := sysconfig.NewRegistry()
	err := reg.Register(
		sysconfig.Spec{
			Key: "pay.wechat.enabled", Module: "pay", Type: sysconfig.TypeBool,
			Description: "是否启用微信支付", Default: "false",
		},
		sysconfig.Spec{
			Key: "pay.order.max_items", Module: "pay", Type: sysconfig.TypeInt,
			Description: "单笔订单最多商品数", Default: "50", Min: &minOrder, Max: &maxOrder,
		},
		sysconfig.Spec{
			Key: "pay.wechat.api_key", Module: "pay", Type: sysconfig.TypeString,
			Description: "微信支付 API 密钥", Default: "", Sensitive: true, MaxLen: 64,
		},
	)
	if err != nil {
		fmt.Println(err)
		return
	}

	current := &sysconfig.Stored{Key: "pay.order.max_items", Value: "50", Type: sysconfig.TypeInt, Version: 3}
	plan, err := sysconfig.PlanUpdate(reg, sysconfig.UpdateRequest{
		Key: "pay.order.max_items", Raw: json.RawMessage(`80`), ExpectedVersion: &current.Version, Actor: "admin-1",
	}, current)
	fmt.Println(plan.NewText, plan.NewVersion, plan.Decision.Outcome, err)

	bad := sysconfig.UpdateRequest{Key: "pay.order.max_items", Raw: json.RawMessage(`1.5`), Actor: "admin-1"}
	_, err = sysconfig.PlanUpdate(reg, bad, current)
	rec := sysconfig.RejectedDecision(reg, bad, current, err)
	fmt.Println(rec.Outcome, rec.Code, rec.Reason)

	secretPlan, _ := sysconfig.PlanUpdate(reg, sysconfig.UpdateRequest{
		Key: "pay.wechat.api_key", Raw: json.RawMessage(`"k-123"`), Actor: "admin-1",
	}, nil)
	fmt.Println(secretPlan.Decision.NewValue, secretPlan.Value)
	fmt.Println(reg.Modules(), len(reg.List("pay")))
	// Output:
	// 80 4 accepted <nil>
	// rejected CONFIG_VALUE_INVALID 配置值不合法：值必须是整数
	// ****** ******
	// [pay] 3
}
