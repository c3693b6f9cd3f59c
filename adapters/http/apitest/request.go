package apitest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/auth"
	"github.com/july/template/adapters/http/httpx"
)

// Token returns an HS256 bearer token for sub with roles, signed with
// secret and valid for an hour.
func Token(t testing.TB, secret []byte, sub string, roles ...string) string {
	t.Helper()
	tok, err := auth.IssueToken(secret, sub, roles, time.Hour, time.Now())
	require.NoError(t, err)
	return tok
}

// Request is one HTTP request.
type Request struct {
	Method, Path string
	// Body is sent as application/json unless Header sets Content-Type;
	// "" sends no body.
	Body string
	// Token is sent as "Authorization: Bearer <Token>"; "" sends none.
	Token string
	// Header is set last, over the defaults.
	Header map[string]string
}

// Response is one answer.
type Response struct {
	Status int
	Header http.Header
	Body   string
	// Error is the error envelope's "error" of a non-2xx answer (Do fails
	// the test when that answer is no envelope); zero otherwise.
	Error Error
	// Request is the request sent, for the contract check.
	Request *http.Request
}

// Error is the "error" member of the error envelope.
type Error struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	RequestID string         `json:"request_id"`
	Retryable bool           `json:"retryable"`
	Details   []httpx.Detail `json:"details"`
}

// Decode unmarshals the JSON body into v, failing t otherwise.
func (r Response) Decode(t testing.TB, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(r.Body), v), "%s %s -> %d: body %s", r.method(), r.path(), r.Status, r.Body)
}

func (r Response) method() string {
	if r.Request == nil {
		return ""
	}
	return r.Request.Method
}

func (r Response) path() string {
	if r.Request == nil {
		return ""
	}
	return r.Request.URL.Path
}

// Do sends r to the server at baseURL (e.g. an httptest.Server's URL) and
// fails t on a transport error or a non-2xx answer without an envelope.
func Do(t testing.TB, baseURL string, r Request) Response {
	t.Helper()
	res, err := Send(context.WithoutCancel(t.Context()), baseURL, r)
	require.NoError(t, err, "%s %s", r.Method, r.Path)
	if res.Status >= 400 {
		var env struct {
			Error *Error `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.Body), &env), "%s %s -> %d: error body %s", r.Method, r.Path, res.Status, res.Body)
		require.NotNil(t, env.Error, "%s %s -> %d: no error envelope: %s", r.Method, r.Path, res.Status, res.Body)
	}
	return res
}

// Send is Do without assertions, for goroutines other than the test's.
func Send(ctx context.Context, baseURL string, r Request) (Response, error) {
	var body io.Reader
	if r.Body != "" {
		body = strings.NewReader(r.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, r.Method, baseURL+r.Path, body)
	if err != nil {
		return Response{}, err
	}
	if r.Body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.Token)
	}
	for k, v := range r.Header {
		hr.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		return Response{}, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	out := Response{Status: res.StatusCode, Header: res.Header, Body: string(data), Request: hr}
	if res.StatusCode >= 400 {
		var env struct {
			Error Error `json:"error"`
		}
		if json.Unmarshal(data, &env) == nil {
			out.Error = env.Error
		}
	}
	return out, err
}
