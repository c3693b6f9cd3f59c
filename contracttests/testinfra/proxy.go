package testinfra

import (
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP forwarder in front of a real server (Postgres, Redis) for
// outage tests: Down closes the listener and every open connection, so the
// app under test sees "connection refused" and broken connections;
// Blackhole holds every byte and keeps accepting, so the app sees a server
// that hangs; Up forwards again on the same port and the app can recover
// by itself.
type Proxy struct {
	// Addr is the proxy's 127.0.0.1:<port>; it stays the same across Down/Up.
	Addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	// resume is closed when a Blackhole ends; nil while none is on.
	resume chan struct{}
}

// StartProxy forwards a free local port to target (host:port) until t
// ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(p.Down)
	return p
}

// ProxyURL returns rawURL (postgres:// or redis://) with its host replaced
// by a proxy started for it, and the proxy.
func ProxyURL(t testing.TB, rawURL string) (string, *Proxy) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parse url to proxy: %v", err)
	}
	p := StartProxy(t, u.Host)
	u.Host = p.Addr
	return u.String(), p
}

// Down refuses new connections and breaks open ones (ending a Blackhole).
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endBlackhole()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Blackhole makes the server hang without a disconnect: connections are
// still accepted, and nothing is forwarded either way on any connection,
// so only the app's own timeouts end its calls. Nothing is dropped: Up
// delivers what was held, in order, as a stalled network would.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

// endBlackhole releases what a Blackhole holds; the caller holds p.mu.
func (p *Proxy) endBlackhole() {
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

// held blocks while a Blackhole is on (until Up or Down).
func (p *Proxy) held() {
	p.mu.Lock()
	resume := p.resume
	p.mu.Unlock()
	if resume != nil {
		<-resume
	}
}

// Up ends a Blackhole, and after Down listens again on Addr (retrying
// briefly while the port is released).
func (p *Proxy) Up(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	p.endBlackhole()
	up := p.ln != nil
	p.mu.Unlock()
	if up {
		return
	}
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", p.Addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("proxy listen again on %s: %v", p.Addr, err)
	}
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) forward(c net.Conn) {
	if !p.track(c) { // so Down closes it while a Blackhole holds it
		_ = c.Close()
		return
	}
	p.held()
	s, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		_ = c.Close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		return
	}
	if !p.track(c, s) {
		_ = c.Close()
		_ = s.Close()
		return
	}
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.held()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go cp(s, c)
	go cp(c, s)
	<-done
	_ = c.Close()
	_ = s.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}
