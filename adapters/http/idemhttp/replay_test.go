package idemhttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/idemhttp"
	"github.com/july/template/core/ports"
)

// Replay writes the stored bytes and Content-Type verbatim: no re-encoding,
// whatever the media type.
func TestReplayWritesStoredResponseVerbatim(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		stored   ports.StoredResponse
		wantType string
	}{
		{"json keeps key order and spacing",
			ports.StoredResponse{Status: http.StatusCreated, Body: []byte(`{"z": 1,  "a":[2, 3]}` + "\n")}, echo.MIMEApplicationJSON},
		{"non-json with its content type",
			ports.StoredResponse{Status: http.StatusAccepted, Body: []byte("sku,qty\r\nA-1,2\r\n"), ContentType: "text/csv; charset=utf-8"}, "text/csv; charset=utf-8"},
		{"no body",
			ports.StoredResponse{Status: http.StatusNoContent}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", nil), rec)
			require.NoError(t, idemhttp.Replay(c, tt.stored))
			require.Equal(t, tt.stored.Status, rec.Code, "stored %+v", tt.stored)
			require.Equal(t, string(tt.stored.Body), rec.Body.String(), "stored %+v", tt.stored)
			require.Equal(t, tt.wantType, rec.Header().Get(echo.HeaderContentType), "stored %+v", tt.stored)
			require.Equal(t, "true", rec.Header().Get(idemhttp.HeaderReplayed), "stored %+v", tt.stored)
		})
	}
}
