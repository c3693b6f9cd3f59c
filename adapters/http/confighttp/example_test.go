package confighttp_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/confighttp"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/configsvc"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

func ExampleRegister() {
	now := func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }
	reg := sysconfig.NewRegistry()
	reg.MustRegister(sysconfig.Spec{Key: "shop.order.max_items", Module: "shop", Type: sysconfig.TypeInt, Default: "10", Description: "单笔订单最多商品数"})
	svc, _ := configsvc.New(reg, memory.NewConfigStore(), memory.NewConfigCache(now), ports.ClockFunc(now), configsvc.Options{})

	secret := []byte(strings.Repeat("s", 32))
	jwt, _ := auth.NewJWT(secret, 0, now)
	log := slog.New(slog.DiscardHandler)
	e := httpx.NewServer(httpx.ServerConfig{NewRequestID: func() string { return "req-00000001" }}, log, confighttp.MapError)
	confighttp.Register(e.Group("/api/v1", auth.Middleware(jwt)), svc, log)

	token, _ := auth.IssueToken(secret, "alice", []string{auth.RoleSuperAdmin}, time.Hour, now())
	req := httptest.NewRequest(http.MethodPut, "/api/v1/system-configs/shop.order.max_items", strings.NewReader(`{"value":"ten"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	fmt.Println(rec.Code)
	fmt.Print(rec.Body.String())
	// Output:
	// 422
	// {"error":{"code":"CONFIG_VALUE_INVALID","message":"配置值不合法：值必须是 整数 类型","request_id":"req-00000001","retryable":false,"details":[{"field":"value","reason":"值必须是 整数 类型"}]}}
}
