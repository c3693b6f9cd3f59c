package apitest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// RawResponse is the answer to a request written byte by byte.
type RawResponse struct {
	Status int
	Header http.Header
	Body   string
	// Closed is true when the server closed the connection after the
	// answer (it read EOF); false when it kept the connection open.
	Closed bool
}

// Raw writes raw (a whole HTTP/1.1 request, framing included, exactly as
// given) on a new TCP connection to baseURL's host, reads one answer and
// then whether the server closes the connection. It never sends more than
// raw: a request that declares a body it does not include shows whether
// the server answers without reading it. Waits are bounded by a generous
// cap, never asserted.
func Raw(t testing.TB, baseURL, raw string) RawResponse {
	t.Helper()
	u, err := url.Parse(baseURL)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(2*time.Minute)))
	_, err = io.WriteString(conn, raw)
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "no answer to %q", raw)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	_ = res.Body.Close()
	out := RawResponse{Status: res.StatusCode, Header: res.Header, Body: string(body)}
	// A server that keeps the connection waits for the next request; the
	// cap only bounds how long that takes to show.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = br.ReadByte()
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		out.Closed = true
	case errors.Is(err, os.ErrDeadlineExceeded):
	case err == nil:
		t.Fatalf("a second answer to one request %q", raw)
	default:
		out.Closed = true // reset by the server
	}
	return out
}
