package accesslog_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/accesslog"
	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/redaction"

	"github.com/july/template/contracttests/testinfra"
)

const (
	password   = "S3cret-Pass!"
	access     = "tok-abcdef123456"
	refresh    = "refresh-qwerty-777"
	signature  = "sig-0123456789"
	nonce      = "nonce-xyz-987"
	payURL     = "https://pay.example.com/p?sign=zzz"
	encrypted  = "ENCRYPTED-BLOB"
	fileBytes  = "FILE-BYTES-CONTENT-123"
	tmpCred    = "tmp-cred-555"
	apiKey     = "apikey-zz-999"
	sessionID  = "sess-abc-111"
	firstChunk = "FIRST-CHUNK\n"
	jwtSecret  = "0123456789abcdef0123456789abcdef-test"
)

var routes = map[string]accesslog.RoutePolicy{
	"/api/v1/login":          {Policy: redaction.PolicyLogin},
	"/api/v1/pay":            {Policy: redaction.PolicyPayment},
	"/api/v1/callback/wecom": {Policy: redaction.PolicyCallback},
	"/api/v1/upload":         {Policy: redaction.PolicyFileTransfer},
	"/api/v1/upload-raw":     {Policy: redaction.PolicyFileTransfer},
	"/api/v1/download":       {Policy: redaction.PolicyFileTransfer},
	"/api/v1/notes":          {Policy: redaction.PolicyDefault, AllowText: true},
}

type bundle struct {
	url      string
	logs     *testinfra.LogBuffer
	failures prometheus.Counter
	release  chan struct{}
	download []byte
}

func setup(t *testing.T, red accesslog.Redactor) *bundle {
	t.Helper()
	b := &bundle{logs: &testinfra.LogBuffer{}, failures: accesslog.NewFailureCounter(), release: make(chan struct{})}
	log := newLogger(b.logs)
	mw := accesslog.New(accesslog.Config{
		Logger: log, Redactor: red, Routes: routes, CaptureBytes: 80 << 10,
		Failures: b.failures, UserIDFunc: auth.UserID,
	})
	e := httpx.NewServer(httpx.ServerConfig{Middleware: []echo.MiddlewareFunc{mw}}, log)
	jwt, err := auth.NewJWT([]byte(jwtSecret), 0, nil)
	require.NoError(t, err)
	authed := auth.Middleware(jwt)

	// reflect answers with the request body and content type, so one route
	// exercises request and response redaction alike.
	reflect := func(c echo.Context) error {
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, c.Request().Header.Get("Content-Type"), body)
	}
	e.POST("/api/v1/login", func(c echo.Context) error {
		if _, err := io.ReadAll(c.Request().Body); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{
			"ok": true, "user_id": "u-1", "access_token": access, "refresh_token": refresh,
			"session": map[string]string{"session_id": sessionID},
		})
	})
	e.POST("/api/v1/pay", func(c echo.Context) error {
		if _, err := io.ReadAll(c.Request().Body); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{
			"order_no": "ORD-20260701-1", "channel": "wechat", "amount": "12.50", "result_code": "SUCCESS",
			"pay_url": payURL, "sign": signature, "nonce_str": nonce,
		})
	}, authed)
	e.POST("/api/v1/callback/wecom", func(c echo.Context) error {
		if _, err := io.ReadAll(c.Request().Body); err != nil {
			return err
		}
		return c.XMLBlob(http.StatusOK, []byte("<xml><Encrypt>"+encrypted+"</Encrypt><MsgSignature>"+signature+"</MsgSignature></xml>"))
	})
	e.POST("/api/v1/upload", func(c echo.Context) error {
		if _, err := c.MultipartForm(); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{
			"task_id": "T-1", "credential": tmpCred,
			"file_url": "https://files.example.com/f.csv?X-Amz-Signature=" + signature,
		})
	}, authed, httpx.BodyLimit(4<<20))
	e.POST("/api/v1/upload-raw", func(c echo.Context) error { return c.NoContent(http.StatusAccepted) }, authed)
	e.GET("/api/v1/download", func(c echo.Context) error {
		c.Response().Header().Set("Content-Type", "application/octet-stream")
		c.Response().WriteHeader(http.StatusOK)
		if _, err := c.Response().Write(b.download[:len(firstChunk)]); err != nil {
			return err
		}
		c.Response().Flush()
		select { // the client must see the first chunk before the rest exists
		case <-b.release:
		case <-time.After(5 * time.Second):
		}
		for rest := b.download[len(firstChunk):]; len(rest) > 0; {
			n := min(64<<10, len(rest))
			if _, err := c.Response().Write(rest[:n]); err != nil {
				return err
			}
			c.Response().Flush()
			rest = rest[n:]
		}
		return nil
	}, authed)
	e.POST("/api/v1/echo", reflect, authed)
	e.POST("/api/v1/notes", reflect)
	e.POST("/api/v1/bind", func(c echo.Context) error {
		var in map[string]any
		if err := c.Bind(&in); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, in)
	})
	e.GET("/api/v1/panic", func(echo.Context) error { panic("handler bug") })

	b.download = bytes.Repeat([]byte(fileBytes+"\x00\x01\xff"), (2<<20)/(len(fileBytes)+3)+1)[:2<<20]
	copy(b.download, firstChunk)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

type request struct {
	id, method, path, ct string
	body                 []byte
	bearer               bool
}

func (b *bundle) send(t *testing.T, r request) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(r.method, b.url+r.path, bytes.NewReader(r.body))
	require.NoError(t, err)
	req.Header.Set(httpx.HeaderRequestID, r.id)
	req.Header.Set("User-Agent", "matrix-test/1.0")
	if r.ct != "" {
		req.Header.Set("Content-Type", r.ct)
	}
	if r.bearer {
		req.Header.Set("Authorization", "Bearer "+token(t))
	}
	res, err := testClient.Do(req)
	require.NoError(t, err, "%s %s", r.method, r.path)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, body
}

func token(t *testing.T) string {
	t.Helper()
	tok, err := auth.IssueToken([]byte(jwtSecret), "user-7", []string{"operator"}, time.Hour, time.Now())
	require.NoError(t, err)
	return tok
}

func multipartBody(t *testing.T) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	require.NoError(t, w.WriteField("password", password))
	require.NoError(t, w.WriteField("note", "credential "+tmpCred))
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="payroll-`+tmpCred+`.csv"`)
	h.Set("Content-Type", "text/csv")
	fw, err := w.CreatePart(h)
	require.NoError(t, err)
	_, err = fw.Write([]byte(strings.Repeat(fileBytes+",", 100)))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes(), w.FormDataContentType()
}

func jsonItems(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"item-%04d","password":%q,"token":%q}`, i, password, access)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// TestMatrix sends the redaction regression samples (secrets in headers,
// query strings and bodies) and checks that no secret
// reaches the log while everything needed to find a request does.
func TestMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t, &redaction.Redactor{HashKey: []byte("test-hash-key")})
	mp, mpType := multipartBody(t)
	medium, large := jsonItems(800), jsonItems(1500)
	require.Greater(t, len(medium), 50<<10)
	require.Less(t, len(medium), 80<<10)
	require.Greater(t, len(large), 80<<10)

	type check map[string]any // dotted field -> expected value
	tests := []struct {
		req      request
		status   int
		want     check
		contains map[string]string // dotted field -> substring
	}{
		{
			req: request{id: "case-login-json", method: "POST", path: "/api/v1/login?lang=zh&ACCESS_TOKEN=" + access, ct: "application/json",
				body: []byte(`{"username":"alice","PassWord":"` + password + `","captcha":"1234","code":"654321","profile":{"credentials":[{"password":"` + password + `"}]}}`)},
			status:   200,
			want:     check{"req.mode": "json", "resp.mode": "json", "route": "/api/v1/login", "req.truncated": false},
			contains: map[string]string{"req.text": `"username":"alice"`, "resp.text": `"user_id":"u-1"`, "query": "lang=[REDACTED:string:2]"},
		},
		{
			req:      request{id: "case-login-form", method: "POST", path: "/api/v1/login", ct: "application/x-www-form-urlencoded", body: []byte("username=alice&password=" + password + "&sms_code=123456")},
			status:   200,
			want:     check{"req.mode": "form"},
			contains: map[string]string{"req.text": "username=alice"},
		},
		{
			req: request{id: "case-pay", method: "POST", path: "/api/v1/pay?order_no=ORD-1&sign=" + signature + "&nonce=" + nonce, ct: "application/json", bearer: true,
				body: []byte(`{"order_no":"ORD-1","amount":"12.50","signature":"` + signature + `","nonce_str":"` + nonce + `","pay_url":"` + payURL + `","card":{"card_number":"6222020202020202"},"X-Api-Key":"` + apiKey + `"}`)},
			status:   200,
			want:     check{"req.mode": "json", "resp.mode": "json", "user_id": "user-7"},
			contains: map[string]string{"resp.text": `"order_no":"ORD-20260701-1"`, "query": "order_no=ORD-1"},
		},
		{
			req: request{id: "case-callback", method: "POST", path: "/api/v1/callback/wecom?msg_signature=" + signature + "&timestamp=1700000000&nonce=" + nonce, ct: "text/xml",
				body: []byte("<xml><ToUserName>corp</ToUserName><Encrypt>" + encrypted + "</Encrypt><Event>change_contact</Event></xml>")},
			status:   200,
			want:     check{"req.mode": "summary", "req.summary.event_type": "change_contact", "resp.mode": "summary", "req.summary.parse_failed": nil},
			contains: map[string]string{"query": "timestamp=1700000000"},
		},
		{
			req:    request{id: "case-callback-broken", method: "POST", path: "/api/v1/callback/wecom", ct: "application/xml", body: []byte("<xml><Encrypt>" + encrypted)},
			status: 200,
			want:   check{"req.mode": "summary", "req.summary.parse_failed": true},
		},
		{
			req:      request{id: "case-upload", method: "POST", path: "/api/v1/upload", ct: mpType, body: mp, bearer: true},
			status:   200,
			want:     check{"req.mode": "summary", "req.summary.field_count": float64(3), "req.truncated": false, "resp.mode": "json"},
			contains: map[string]string{"req.summary.parts": "***.csv", "resp.text": `"task_id":"T-1"`},
		},
		{
			req:    request{id: "case-upload-unparsed", method: "POST", path: "/api/v1/upload-raw", ct: mpType, body: mp, bearer: true},
			status: 202,
			want:   check{"req.mode": "summary", "req.summary.content_type": "multipart/form-data", "req.summary.size": float64(len(mp))},
		},
		{
			req: request{id: "case-echo-nested", method: "POST", path: "/api/v1/echo?page=2&X-Api-Key=" + apiKey + "&refresh_token=" + refresh, ct: "application/json", bearer: true,
				body: []byte(`{"note":"hello","data":[{"ACCESS_TOKEN":"` + access + `"},{"refreshToken":"` + refresh + `"},[{"PassWord":"` + password + `"}]],"X-Api-Key":"` + apiKey + `","link":"` + payURL + `","auth":"Bearer ` + access + `"}`)},
			status:   200,
			want:     check{"req.mode": "json", "resp.mode": "json", "user_id": "user-7", "method": "POST", "path": "/api/v1/echo", "user_agent": "matrix-test/1.0", "ip": "127.0.0.1"},
			contains: map[string]string{"req.text": `"note":"hello"`, "resp.text": `"note":"hello"`, "query": "page=2"},
		},
		{
			req:      request{id: "case-echo-form", method: "POST", path: "/api/v1/echo", ct: "application/x-www-form-urlencoded", bearer: true, body: []byte("user=alice&PassWord=" + password + "&ACCESS_TOKEN=" + access)},
			status:   200,
			want:     check{"req.mode": "form", "resp.mode": "form"},
			contains: map[string]string{"req.text": "user=alice"},
		},
		{
			req:    request{id: "case-echo-xml", method: "POST", path: "/api/v1/echo", ct: "application/xml", bearer: true, body: []byte("<xml><token>" + access + "</token><nonce>" + nonce + "</nonce></xml>")},
			status: 200,
			want:   check{"req.mode": "summary", "resp.mode": "summary"},
		},
		{
			req:    request{id: "case-echo-binary", method: "POST", path: "/api/v1/echo", ct: "application/octet-stream", bearer: true, body: []byte("\x00\x01" + fileBytes + password)},
			status: 200,
			want:   check{"req.mode": "summary", "req.summary.content_type": "application/octet-stream", "req.summary.hmac": nil, "resp.mode": "summary"},
		},
		{
			req:    request{id: "case-echo-unparsable", method: "POST", path: "/api/v1/echo", ct: "application/json", bearer: true, body: []byte(`{"password":"` + password + `","token":`)},
			status: 200,
			want:   check{"req.mode": "summary", "req.summary.parse_failed": true, "resp.mode": "summary"},
		},
		{
			req:    request{id: "case-echo-oversized", method: "POST", path: "/api/v1/echo", ct: "application/json", bearer: true, body: medium},
			status: 200,
			want:   check{"req.mode": "json", "req.truncated": true, "resp.mode": "json", "resp.truncated": true, "req.size": float64(len(medium))},
		},
		{
			req:    request{id: "case-echo-over-capture", method: "POST", path: "/api/v1/echo", ct: "application/json", bearer: true, body: large},
			status: 200,
			want:   check{"req.mode": "summary", "req.truncated": true, "req.summary.truncated": true, "resp.truncated": true},
		},
		{
			req:    request{id: "case-text-not-allowed", method: "POST", path: "/api/v1/echo", ct: "text/plain", bearer: true, body: []byte("just words")},
			status: 200,
			want:   check{"req.mode": "summary"},
		},
		{
			req:      request{id: "case-notes-clean", method: "POST", path: "/api/v1/notes", ct: "text/plain; charset=utf-8", body: []byte("hello from the notes route")},
			status:   200,
			want:     check{"req.mode": "text", "resp.mode": "text", "user_id": ""},
			contains: map[string]string{"req.text": "hello from the notes route"},
		},
		{
			req:    request{id: "case-notes-secret", method: "POST", path: "/api/v1/notes", ct: "text/plain", body: []byte("password=" + password + " token " + access)},
			status: 200,
			want:   check{"req.mode": "summary", "resp.mode": "summary"},
		},
		{
			req:      request{id: "case-bind-invalid", method: "POST", path: "/api/v1/bind", ct: "application/json", body: []byte(`{"password":"` + password + `"`)},
			status:   400,
			want:     check{"req.mode": "summary", "resp.mode": "json", "status": float64(400)},
			contains: map[string]string{"resp.text": httpx.CodeRequestInvalid},
		},
		{
			req:    request{id: "case-unauthenticated", method: "POST", path: "/api/v1/echo", ct: "application/json", body: []byte(`{"password":"` + password + `"}`)},
			status: 401,
			want:   check{"status": float64(401), "user_id": ""},
		},
		{
			req:      request{id: "case-no-route", method: "GET", path: "/api/v1/nowhere?page=1&token=" + access},
			status:   404,
			want:     check{"status": float64(404), "req.mode": "omitted"},
			contains: map[string]string{"query": "page=1&token=[REDACTED]", "resp.text": httpx.CodeRouteNotFound},
		},
		{
			req:    request{id: "case-panic", method: "GET", path: "/api/v1/panic"},
			status: 500,
			want:   check{"status": float64(500), "resp.mode": "json"},
		},
	}
	for _, tt := range tests {
		status, _ := b.send(t, tt.req)
		require.Equal(t, tt.status, status, "%s %s", tt.req.method, tt.req.path)
	}
	got := b.downloadAndCheck(t)

	out, decoded := b.logs.String(), decoded(t, b.logs)
	for _, secret := range []string{password, access, refresh, signature, nonce, payURL, "sign=zzz", encrypted,
		fileBytes, tmpCred, apiKey, sessionID, "6222020202020202", "payroll", "654321", got.token} {
		requireAbsent(t, out, secret)
		requireAbsent(t, decoded, secret)
	}
	for _, tt := range tests {
		t.Run(tt.req.id, func(t *testing.T) {
			l := line(t, b.logs, "access", tt.req.id)
			require.Equal(t, "INFO", l["level"])
			require.Equal(t, tt.req.method, l["method"])
			require.Equal(t, float64(tt.status), l["status"])
			require.Contains(t, l, "latency_ms")
			require.GreaterOrEqual(t, l["latency_ms"], float64(0))
			for k, v := range tt.want {
				require.Equal(t, v, field(l, k), "field %s of %v", k, l)
			}
			for k, sub := range tt.contains {
				require.Contains(t, fmt.Sprint(field(l, k)), sub, "field %s of %v", k, l)
			}
		})
	}
	t.Run("medium body is redacted then cut at 50 KiB", func(t *testing.T) {
		l := line(t, b.logs, "access", "case-echo-oversized")
		text, _ := field(l, "req.text").(string)
		require.LessOrEqual(t, len(text), 50<<10)
		require.Greater(t, len(text), 40<<10)
		require.Contains(t, text, `"name":"item-0000","password":"[REDACTED]"`)
	})
	t.Run("download", func(t *testing.T) {
		l := line(t, b.logs, "access", "case-download")
		require.Equal(t, "summary", field(l, "resp.mode"))
		require.Equal(t, float64(2<<20), field(l, "resp.size"))
		require.Equal(t, "application/octet-stream", field(l, "resp.summary.content_type"))
		require.Equal(t, false, field(l, "resp.truncated"))
		require.Equal(t, "user-7", l["user_id"])
	})
	require.Equal(t, 0.0, counterValue(t, b.failures), "no redaction failures expected")
}

// requireAbsent fails with the offending line's start and the secret's
// surroundings rather than the whole (large) log.
func requireAbsent(t *testing.T, logs, secret string) {
	t.Helper()
	i := strings.Index(logs, secret)
	if i < 0 {
		return
	}
	lineStart := strings.LastIndexByte(logs[:i], '\n') + 1
	require.Failf(t, "secret in log", "%q found; line starts %q; around %q",
		secret, logs[lineStart:min(lineStart+200, len(logs))], logs[max(i-150, 0):min(i+50, len(logs))])
}

type downloadResult struct{ token string }

// downloadAndCheck streams the 2 MiB download: the first chunk must arrive
// while the handler is still waiting (Flush passed through), and every
// byte must arrive intact.
func (b *bundle) downloadAndCheck(t *testing.T) downloadResult {
	t.Helper()
	tok := token(t)
	req, err := http.NewRequest(http.MethodGet, b.url+"/api/v1/download", nil)
	require.NoError(t, err)
	req.Header.Set(httpx.HeaderRequestID, "case-download")
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := testClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	first := make([]byte, len(firstChunk))
	start := time.Now()
	_, err = io.ReadFull(res.Body, first)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 3*time.Second, "first chunk must be flushed before the handler continues")
	require.Equal(t, firstChunk, string(first))
	close(b.release)
	rest, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, len(b.download), len(first)+len(rest))
	require.True(t, bytes.Equal(b.download[len(first):], rest), "download corrupted")
	return downloadResult{token: tok}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
