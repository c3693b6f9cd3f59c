package testinfra

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RedisProc is a private redis-server child process for outage tests: unlike
// the shared Redis from NewRedis it may be stopped and started again on the
// same port. By default it keeps nothing on disk, so a restart comes back
// empty.
type RedisProc struct {
	// Port is the TCP port on 127.0.0.1; it stays the same across restarts.
	Port int
	// URL is redis://127.0.0.1:<Port>/0.
	URL string

	bin  string
	args []string // after the defaults, so they override them
	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *bytes.Buffer
}

// StartRedisProc starts redis-server (from PATH, else /usr/bin) on a free
// port and waits until it answers PING. The process is killed when t ends.
// args are further redis-server options (e.g. "--appendonly", "yes"); they
// override the defaults (no RDB save points, no AOF), and the working
// directory for any file the server writes is a temporary one of t's.
func StartRedisProc(t testing.TB, args ...string) *RedisProc {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		bin = "/usr/bin/redis-server"
	}
	port := quietPort(t)
	dir := t.TempDir() // removed after the Cleanup below has stopped the server
	r := &RedisProc{Port: port, URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port), bin: bin,
		args: append([]string{"--dir", dir}, args...)}
	t.Cleanup(func() { r.Stop(t) })
	r.Start(t)
	return r
}

// Start (re)starts the server on Port and waits up to 10s for PING. It does
// nothing when the server is already running.
func (r *RedisProc) Start(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return
	}
	r.out = &bytes.Buffer{}
	cmd := exec.Command(r.bin, append([]string{"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no"}, r.args...)...)
	cmd.Stdout, cmd.Stderr = r.out, r.out
	// Its own process group, so Stop also ends a BGSAVE or AOF rewrite
	// child, which would outlive a SIGKILL and keep writing into --dir.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v. Fix: install redis-server (apt-get install redis-server)", r.bin, err)
	}
	r.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(r.Port); err == nil {
			return
		} else if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait() // after Wait the output buffer is safe to read
			r.cmd = nil
			t.Fatalf("redis-server on port %d did not answer PING within 10s: %v; output: %s", r.Port, err, r.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL, no shutdown save) and waits for it to
// exit. It is safe to call when the server is not running.
func (r *RedisProc) Stop(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	_ = r.cmd.Wait()
	r.cmd = nil
}

func ping(port int) error {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected reply %q", strings.TrimSpace(line))
	}
	return nil
}

// quietPort returns a free loopback port in 12000-31999, below Linux's
// ephemeral range (32768-60999): the server keeps it across restarts, and
// a port in the ephemeral range may be taken by any outgoing connection of
// a busy machine while the server is down.
func quietPort(t testing.TB) int {
	t.Helper()
	for range 10_000 {
		p := 12000 + rand.IntN(20000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		_ = l.Close()
		return p
	}
	t.Fatal("testinfra: no free loopback port in 12000-31999")
	return 0
}
