package confighttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/core/sysconfig"
)

// MaxKeyLen is the longest key accepted (tb_system_config.config_key).
const MaxKeyLen = 128

// ModulePattern is the accepted ?module= format: a key's first segment.
const ModulePattern = `^[a-z][a-z0-9_]{0,63}$`

var moduleRE = regexp.MustCompile(ModulePattern)

// updateBody is the PUT body. Value stays raw: the key's spec parses it.
type updateBody struct {
	Value   json.RawMessage `json:"value"`
	Version *int64          `json:"version"`
}

func invalid(field, reason string) *httpx.Error {
	return httpx.BadRequest(httpx.CodeRequestInvalid, "请求参数不正确："+reason).
		WithDetails(httpx.Detail{Field: field, Reason: reason})
}

// keyParam returns the :key path parameter when it has the registered-key
// format; a malformed key can never be registered, so it is refused as a
// malformed request without touching the store.
func keyParam(c echo.Context) (string, error) {
	key := c.Param("key")
	if len(key) > MaxKeyLen || !sysconfig.ValidKey(key) {
		return "", invalid("key", "配置 Key 格式应为 module.group.name（小写字母、数字、下划线，最长 128 字符）")
	}
	return key, nil
}

// moduleParam returns the optional ?module= filter.
func moduleParam(c echo.Context) (string, error) {
	m := c.QueryParam("module")
	if m != "" && !moduleRE.MatchString(m) {
		return "", invalid("module", "module 应为小写字母开头的小写字母、数字或下划线，最长 64 字符")
	}
	return m, nil
}

// decodeUpdate reads the PUT body and the If-Match header into the
// expected version. A body over the limit keeps its *http.MaxBytesError so
// the error handler answers 413.
func decodeUpdate(c echo.Context) (updateBody, error) {
	r := c.Request()
	if !httpx.IsJSON(r.Header.Get(echo.HeaderContentType)) {
		return updateBody{}, httpx.NotJSON()
	}
	data, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || httpx.IsBudgetRefusal(err) {
		return updateBody{}, err // 413, or the body budget's own answer
	}
	if err != nil {
		return updateBody{}, invalid("body", "无法读取请求体，请重试")
	}
	var b updateBody
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || dec.More() || !isObject(data) {
		return updateBody{}, invalid("body", `请求体应为 JSON 对象 {"value": <与配置类型一致的 JSON 值>, "version": <整数，可选>}`)
	}
	if len(b.Value) == 0 {
		return updateBody{}, invalid("value", "value 为必填字段")
	}
	if b.Version != nil && *b.Version < 0 {
		return updateBody{}, invalid("version", "version 应为不小于 0 的整数")
	}
	ifMatch, ok, err := parseIfMatch(r.Header.Get("If-Match"))
	switch {
	case err != nil:
		return updateBody{}, err
	case ok && b.Version != nil && *b.Version != ifMatch:
		return updateBody{}, invalid("If-Match", "If-Match 与请求体中的 version 不一致，请只提供一个或保持一致")
	case ok:
		b.Version = &ifMatch
	}
	return b, nil
}

func isObject(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// parseIfMatch accepts one strong entity tag holding a version, as GET
// sends in ETag: "3". ok is false when the header is absent.
func parseIfMatch(h string) (v int64, ok bool, err error) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false, nil
	}
	bad := invalid("If-Match", `If-Match 应为读取时返回的 ETag，例如 "3"`)
	if len(h) < 3 || h[0] != '"' || h[len(h)-1] != '"' {
		return 0, false, bad
	}
	v, perr := strconv.ParseInt(h[1:len(h)-1], 10, 64)
	if perr != nil || v < 0 {
		return 0, false, bad
	}
	return v, true, nil
}

// etag is the entity tag of a view: its version, quoted.
func etag(v sysconfig.View) string { return `"` + strconv.FormatInt(v.Version, 10) + `"` }
