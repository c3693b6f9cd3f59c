package accesslog_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/redaction"

	"github.com/july/template/contracttests/testinfra"
)

// leakRoutes are the routes of the issue-15 leak tests, each under the
// policy a real service would give it.
var leakRoutes = map[string]accesslog.RoutePolicy{
	"/api/v1/topups":         {Policy: redaction.PolicyPayment},
	"/api/v1/sessions":       {Policy: redaction.PolicyLogin},
	"/api/v1/system-configs": {Policy: redaction.PolicyConfig},
	"/api/v1/reset/:token":   {SecretParams: []string{"token"}},
	"/api/v1/files":          {Policy: redaction.PolicyFileTransfer},
	"/api/v1/notes":          {AllowText: true},
}

type leakBundle struct {
	url  string
	logs *testinfra.LogBuffer
}

func leakSetup(t *testing.T) *leakBundle {
	t.Helper()
	b := &leakBundle{logs: &testinfra.LogBuffer{}}
	log := newLogger(b.logs)
	mw := accesslog.New(accesslog.Config{
		Logger: log, Redactor: &redaction.Redactor{HashKey: []byte("k")}, Routes: leakRoutes, UserIDFunc: auth.UserID,
	})
	e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{mw}}, log)
	jwt, err := auth.NewJWT([]byte(jwtSecret), 0, nil)
	require.NoError(t, err)
	reflect := func(c echo.Context) error {
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, c.Request().Header.Get("Content-Type"), body)
	}
	e.POST("/api/v1/topups", reflect)
	e.POST("/api/v1/hooks", reflect)
	e.POST("/api/v1/notes", reflect)
	e.POST("/api/v1/sessions", func(c echo.Context) error {
		if _, err := io.ReadAll(c.Request().Body); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{
			"ok": true, "user_id": "u-42", "access_token": access, "phone": "13800138000",
			"email": "alice-plant@example.com", "real_name": "王小明", "session": sessionID,
		})
	})
	e.GET("/api/v1/system-configs", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]any{"items": []map[string]any{
			{"key": "payment.wechat.enabled", "module": "payment", "value": true},
			{"key": "auth.token_ttl_seconds", "module": "auth", "value": 3600},
		}})
	})
	e.GET("/api/v1/reset/:token", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	e.POST("/api/v1/files", func(c echo.Context) error {
		if _, err := c.MultipartForm(); err != nil {
			return err
		}
		return c.NoContent(http.StatusAccepted)
	})
	e.GET("/api/v1/admin", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) },
		auth.Middleware(jwt), auth.RequireRole("super_admin"))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

type leakRequest struct {
	id, method, path, ct string
	body                 []byte
	header               map[string]string
}

func (b *leakBundle) send(t *testing.T, r leakRequest) int {
	t.Helper()
	req, err := http.NewRequest(r.method, b.url+r.path, bytes.NewReader(r.body))
	require.NoError(t, err)
	req.Header.Set(httpx.HeaderRequestID, r.id)
	if r.ct != "" {
		req.Header.Set("Content-Type", r.ct)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	res, err := testClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	_, err = io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode
}

// TestIssue15Leaks sends what the issue found in the logs through the real
// HTTP stack and greps the captured log for every planted value.
func TestIssue15Leaks(t *testing.T) {
	t.Parallel()
	b := leakSetup(t)
	var planted []string
	p := func(name string) string {
		v := "PL" + strings.ToUpper(name) + "x7Q"
		planted = append(planted, v)
		return v
	}

	var topup strings.Builder
	topup.WriteString(`{"order_no":"ORD-77","channel":"alipay","amount":"88.00"`)
	for _, k := range []string{"bank_card_no", "bankCardNo", "creditCard", "cvv2", "security_code", "idCardNo",
		"payPwd", "loginPwd", "pin_code", "passcode", "qr_url", "payment_link", "cashier_url", "otp_code",
		"smsVerifyCode", "captcha_code"} {
		topup.WriteString(`,"` + k + `":"` + p(k) + `"`)
	}
	topup.WriteString(`}`)

	hook := `{"hook":"https://admin:` + p("userinfo") + `@host/x","redirect":"https://app/cb#access_token=` + p("fragment") + `",` +
		`"note":"password=` + p("notepw") + `","dsn":"postgres://app:` + p("dsn") + `@db/x",` +
		`"key_material":"-----BEGIN PRIVATE KEY-----\nMIIB` + p("pem") + `\n-----END PRIVATE KEY-----",` +
		`"inner":"{\"secret\":\"` + p("inner") + `\"}","headers":[["Authorization","Bearer ` + p("hdrbearer") + `"]],` +
		`"h2":{"name":"X-Api-Key","value":"` + p("hdrobj") + `"},"remark":"card 6222021234567894 and id 11010519491231002X",` +
		`"order_no":"ORD-88","amount":"1.00"}`
	planted = append(planted, "6222021234567894", "11010519491231002X")

	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQTFBBUlQifQ.`+p("partname")+`"; filename="a.csv"`)
	h.Set("Content-Type", "text/csv; token="+p("partct"))
	fw, err := mw.CreatePart(h)
	require.NoError(t, err)
	_, err = fw.Write([]byte("a,b\n"))
	require.NoError(t, err)
	require.NoError(t, mw.Close())

	reqs := []leakRequest{
		{id: "leak-topup", method: "POST", path: "/api/v1/topups", ct: "application/json", body: []byte(topup.String())},
		{id: "leak-hook", method: "POST", path: "/api/v1/hooks", ct: "application/json", body: []byte(hook)},
		{id: "leak-query", method: "GET", path: "/api/v1/hooks?page=3;password=" + p("semi") + "&lang=zh"},
		{id: "leak-headers", method: "GET", path: "/api/v1/hooks", header: map[string]string{
			"User-Agent": "sdk/1.0 token=" + p("ua"), "Referer": "https://app.example/cb?access_token=" + p("referer") + "&tab=2"}},
		{id: "leak-path", method: "GET", path: "/api/v1/reset/" + p("pathtoken")},
		{id: "leak-multipart", method: "POST", path: "/api/v1/files", ct: mw.FormDataContentType(), body: mp.Bytes()},
		{id: "leak-xml", method: "POST", path: "/api/v1/notes", ct: "application/xml", body: []byte("<req><remark>card 6222021234567894</remark></req>")},
		{id: "leak-login", method: "POST", path: "/api/v1/sessions", ct: "application/json",
			body: []byte(`{"username":"alice","password":"` + password + `","captcha":"` + p("captcha") + `"}`)},
	}
	planted = append(planted, access, sessionID, password, "13800138000", "alice-plant@example.com", "王小明")
	for _, r := range reqs {
		b.send(t, r)
	}

	out, dec := b.logs.String(), decoded(t, b.logs)
	for _, s := range planted {
		requireAbsent(t, out, s)
		requireAbsent(t, dec, s)
	}

	topupLine := line(t, b.logs, "access", "leak-topup")
	text, _ := field(topupLine, "req.text").(string)
	for _, keep := range []string{`"order_no":"ORD-77"`, `"channel":"alipay"`, `"amount":"88.00"`} {
		require.Contains(t, text, keep)
	}
	hookText, _ := field(line(t, b.logs, "access", "leak-hook"), "req.text").(string)
	require.Contains(t, hookText, `"order_no":"ORD-88"`)
	require.Contains(t, hookText, `"amount":"1.00"`)

	q := line(t, b.logs, "access", "leak-query")
	require.Equal(t, "page=3;password=[REDACTED]&lang=zh", q["query"])
	hl := line(t, b.logs, "access", "leak-headers")
	require.Contains(t, hl["user_agent"], "sdk/1.0")
	require.Contains(t, hl["referer"], "https://app.example/cb?")
	require.Contains(t, hl["referer"], "tab=2")
	pl := line(t, b.logs, "access", "leak-path")
	require.Equal(t, "/api/v1/reset/[REDACTED]", pl["path"])
	require.Equal(t, "/api/v1/reset/:token", pl["route"])
	lg := line(t, b.logs, "access", "leak-login")
	require.Contains(t, field(lg, "resp.text"), `"user_id":"u-42"`)
	require.Contains(t, field(lg, "resp.text"), `"ok":true`)
	require.Contains(t, field(lg, "req.text"), `"username":"alice"`)
}

// TestOperatorsStillRead: config key names and distinct 401/403 causes
// survive redaction, with method, path, safe query, status and user.
func TestOperatorsStillRead(t *testing.T) {
	t.Parallel()
	b := leakSetup(t)
	tok := func(roles ...string) string {
		s, err := auth.IssueToken([]byte(jwtSecret), "user-9", roles, time.Hour, time.Now())
		require.NoError(t, err)
		return s
	}
	b.send(t, leakRequest{id: "op-config", method: "GET", path: "/api/v1/system-configs?module=payment"})
	b.send(t, leakRequest{id: "op-401-missing", method: "GET", path: "/api/v1/admin"})
	b.send(t, leakRequest{id: "op-401-bad", method: "GET", path: "/api/v1/admin", header: map[string]string{"Authorization": "Bearer not-a-jwt"}})
	b.send(t, leakRequest{id: "op-403-role", method: "GET", path: "/api/v1/admin", header: map[string]string{"Authorization": "Bearer " + tok("operator")}})

	cfg := line(t, b.logs, "access", "op-config")
	require.Equal(t, "GET", cfg["method"])
	require.Equal(t, "/api/v1/system-configs", cfg["path"])
	require.Equal(t, "module=payment", cfg["query"])
	require.Contains(t, field(cfg, "resp.text"), `"key":"payment.wechat.enabled"`)
	require.Contains(t, field(cfg, "resp.text"), `"key":"auth.token_ttl_seconds"`)

	causes := map[string]bool{}
	for _, id := range []string{"op-401-missing", "op-401-bad", "op-403-role"} {
		rej := line(t, b.logs, "request rejected", id)
		err, _ := rej["error"].(string)
		require.NotContains(t, err, redaction.Redacted, "cause of %s: %q", id, err)
		causes[err] = true
		acc := line(t, b.logs, "access", id)
		require.NotContains(t, field(acc, "resp.text"), redaction.Redacted, "response of %s", id)
	}
	require.Len(t, causes, 3, "causes must be told apart: %v", causes)
	require.Equal(t, "user-9", line(t, b.logs, "access", "op-403-role")["user_id"])
}
