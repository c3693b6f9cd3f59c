package httpx_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/httpx"
	"github.com/july/template/contracttests/testinfra"
)

// A refusal that leaves the request body unread closes the connection:
// otherwise the server reads and discards up to 256 KB of it per request
// to keep the connection, work a refused caller should not get. A refusal
// after the body was read keeps the connection.
func TestRefusalWithUnreadBodyClosesTheConnection(t *testing.T) {
	t.Parallel()
	e := httpx.NewServer(httpx.ServerConfig{BodyLimit: 64 << 10}, newLogger(&testinfra.LogBuffer{}))
	e.POST("/refuse", func(echo.Context) error {
		return httpx.Forbidden(httpx.CodeForbidden, "当前账号无权执行此操作")
	})
	e.POST("/read", func(c echo.Context) error {
		if _, err := io.Copy(io.Discard, c.Request().Body); err != nil {
			return err
		}
		return httpx.Unprocessable("AMOUNT_INVALID", "金额必须大于 0")
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	send := func(t *testing.T, path string) (*http.Response, net.Conn) {
		t.Helper()
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		body := strings.Repeat("x", 20_000)
		_, err = io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 20000\r\n\r\n"+body)
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res, conn
	}

	res, conn := send(t, "/refuse")
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.True(t, res.Close, "rule: Connection: close on a refusal that left the body unread (header %v)", res.Header)
	_, err := conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "rule: the server closed the connection")

	res, _ = send(t, "/read")
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.False(t, res.Close, "a refusal after the whole body was read keeps the connection")
}

// A request with both Content-Length and Transfer-Encoding (request
// smuggling's shape) is read as chunked, and its connection is closed
// after the answer, so nothing can follow it on that connection.
func TestChunkedRequestClosesTheConnection(t *testing.T) {
	t.Parallel()
	e := httpx.NewServer(httpx.ServerConfig{}, newLogger(&testinfra.LogBuffer{}))
	e.POST("/read", func(c echo.Context) error {
		b, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		return c.String(http.StatusOK, string(b))
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	smuggled := "GET /read HTTP/1.1\r\nHost: t\r\n\r\n"
	_, err = io.WriteString(conn, "POST /read HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"2\r\nok\r\n0\r\n\r\n"+smuggled)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	require.Equal(t, "ok", string(b), "read as chunked")
	require.True(t, res.Close, "rule: Connection: close after a chunked request")
	_, err = http.ReadResponse(br, nil)
	require.Error(t, err, "rule: no answer to the request behind it: the connection is closed")
}
