package idemhttp_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/idemhttp"
)

// formPart is one part of a test upload; file empty means a plain field.
type formPart struct {
	field, file, contentType, content string
}

// multipartBody encodes parts with the given boundary, as a client that
// picks a fresh boundary per send (curl -F, browsers) would.
func multipartBody(t *testing.T, boundary string, parts ...formPart) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	require.NoError(t, mw.SetBoundary(boundary))
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := `form-data; name="` + p.field + `"`
		if p.file != "" {
			cd += `; filename="` + p.file + `"`
		}
		h.Set("Content-Disposition", cd)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		w, err := mw.CreatePart(h)
		require.NoError(t, err)
		_, err = w.Write([]byte(p.content))
		require.NoError(t, err)
	}
	require.NoError(t, mw.Close())
	return buf.String(), mw.FormDataContentType()
}

var (
	amountPart = formPart{field: "amount_cents", content: "100"}
	filePart   = formPart{field: "file", file: "orders.csv", contentType: "text/csv", content: "sku,qty\nA-1,2\n"}
)

func TestIdemMultipartRetryWithNewBoundaryReplays(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{guard: redisGuard(t), capture: true})

	body, ct := multipartBody(t, "boundary-first-7f3a9c21", amountPart, filePart)
	first := a.post(t, body, "Content-Type", ct, "X-Request-ID", "upload-req-0001")
	require.Equal(t, http.StatusCreated, first.Status, "body %s", first.Body)
	require.JSONEq(t, `{"id":1,"amount_cents":100}`, first.Body, "rule: the handler still reads the restored body")

	// Another boundary, another preamble and the parts in another order:
	// the same command.
	body2, ct2 := multipartBody(t, "a-completely-different-boundary-01", filePart, amountPart)
	again := a.post(t, "preamble\r\n"+body2, "Content-Type", ct2, "X-Request-ID", "upload-req-0001")
	require.Equal(t, http.StatusCreated, again.Status, "body %s", again.Body)
	require.Equal(t, "true", again.Header.Get(idemhttp.HeaderReplayed), "rule: a new boundary is still a retry")
	require.Equal(t, first.Body, again.Body, "rule: a replay has the original body, byte for byte")
	require.EqualValues(t, 1, a.rows(t))
}

func TestIdemMultipartDifferentContentIsReused(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{capture: true})
	body, ct := multipartBody(t, "boundary-first-7f3a9c21", amountPart, filePart)
	require.Equal(t, http.StatusCreated, a.post(t, body, "Content-Type", ct, "X-Request-ID", "upload-req-0002").Status)

	tests := []struct {
		name  string
		parts []formPart
	}{
		{"file content", []formPart{amountPart, {field: "file", file: "orders.csv", contentType: "text/csv", content: "sku,qty\nA-1,3\n"}}},
		{"file name", []formPart{amountPart, {field: "file", file: "other.csv", contentType: "text/csv", content: filePart.content}}},
		{"part content type", []formPart{amountPart, {field: "file", file: "orders.csv", contentType: "text/plain", content: filePart.content}}},
		{"field name", []formPart{amountPart, {field: "upload", file: "orders.csv", contentType: "text/csv", content: filePart.content}}},
		{"field value", []formPart{{field: "amount_cents", content: "101"}, filePart}},
		{"extra part", []formPart{amountPart, filePart, filePart}},
		{"missing part", []formPart{amountPart}},
	}
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				b, c := multipartBody(t, "boundary-second-"+tt.name[:4], tt.parts...)
				r := a.post(t, b, "Content-Type", c, "X-Request-ID", "upload-req-0002")
				require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s: body %s", tt.name, r.Body)
				require.Equal(t, idemhttp.CodeKeyReused, r.Error.Code, tt.name)
			})
		}
	})
	require.EqualValues(t, 1, a.rows(t), "rule: a reused key writes nothing")
}

func TestIdemMalformedMultipartIsBadRequest(t *testing.T) {
	t.Parallel()
	a := newApp(t, appOpts{capture: true})
	body, ct := multipartBody(t, "boundary-first-7f3a9c21", amountPart, filePart)

	tests := []struct {
		name, body, contentType string
	}{
		{"no boundary parameter", body, "multipart/form-data"},
		{"wrong boundary", body, "multipart/form-data; boundary=not-the-boundary"},
		{"truncated", body[:len(body)-20], ct},
		{"empty", "", ct},
	}
	t.Run("cases", func(t *testing.T) {
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				r := a.post(t, tt.body, "Content-Type", tt.contentType, "X-Request-ID", "upload-bad-000"+strconv.Itoa(i))
				require.Equal(t, http.StatusBadRequest, r.Status, "%s: body %s", tt.name, r.Body)
				require.Equal(t, "REQUEST_INVALID", r.Error.Code, tt.name)
				require.Contains(t, r.Body, "multipart/form-data", tt.name)
			})
		}
	})
	require.Zero(t, a.handled.Load(), "rule: a malformed body never reaches the handler")
}
