package accesslog

import (
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/httpx"
)

// loggable reports whether a body of this content type may be buffered:
// only formats core/redaction can parse are; multipart and binary never are.
func loggable(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/x-www-form-urlencoded" ||
		mt == "application/xml" || strings.HasSuffix(mt, "+xml") ||
		strings.HasPrefix(mt, "text/")
}

// buffer keeps at most limit bytes of what passes through and counts it all.
type buffer struct {
	data   []byte
	pooled *[]byte // where data came from in bufPool, put back by release
	limit  int
	n      int64
	keep   bool
}

func (b *buffer) add(p []byte) {
	b.n += int64(len(p))
	if room := b.limit - len(b.data); b.keep && room > 0 && len(p) > 0 {
		if b.pooled == nil && b.data == nil {
			b.pooled = bufPool.Get().(*[]byte)
			b.data = (*b.pooled)[:0]
		}
		b.data = append(b.data, p[:min(room, len(p))]...)
	}
}

// maxPooled bounds the buffers kept for reuse, so one large body does not
// pin its memory for the life of the process.
const maxPooled = 256 << 10

// bufPool recycles capture buffers: growing a fresh one per request was
// the middleware's largest allocation.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// release returns the buffer to the pool, reusing the pointer it came in
// so that putting it back allocates nothing. The redactor copies what it
// returns, so nothing logged still refers to it.
func (b *buffer) release() {
	if b.pooled != nil && cap(b.data) <= maxPooled {
		*b.pooled = b.data[:0]
		bufPool.Put(b.pooled)
	}
	b.data, b.pooled = nil, nil
}

// cut reports whether a buffered body was kept only in part. A body that
// was never to be buffered is not "cut": nothing of it is logged.
func (b *buffer) cut(size int64) bool { return b.keep && int64(len(b.data)) < size }

// requestTap copies the request body as the handler reads it, except
// while httpx.ReadBody reads it: that body is kept whole and shared, so the
// log takes it from there (requestBody) instead of holding a second copy.
type requestTap struct {
	rc io.ReadCloser
	c  echo.Context
	buffer
}

func (t *requestTap) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if t.keep && httpx.ReadingBody(t.c) {
		t.n += int64(n)
		return n, err
	}
	t.add(p[:n])
	return n, err
}

func (t *requestTap) Close() error { return t.rc.Close() }

// recorder copies the response as the handler writes it. It decides at the
// first write whether the body may be buffered, from the Content-Type the
// handler set (or the one net/http will sniff) and Content-Encoding.
type recorder struct {
	http.ResponseWriter
	buffer
	decided bool
}

func (w *recorder) Write(p []byte) (int, error) {
	if !w.decided {
		w.decided = true
		h := w.Header()
		ct := h.Get("Content-Type")
		if ct == "" {
			ct = http.DetectContentType(p)
		}
		enc := h.Get("Content-Encoding")
		w.keep = loggable(ct) && (enc == "" || enc == "identity")
	}
	n, err := w.ResponseWriter.Write(p)
	w.add(p[:n])
	return n, err
}

// Flush passes through so streaming handlers keep streaming.
func (w *recorder) Flush() { _ = w.FlushError() }

// FlushError flushes the underlying writer, reporting http.ErrNotSupported
// when it cannot.
func (w *recorder) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
