package pgtopo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Server is a single Postgres server of its own (no standby) whose data
// directory a test may destroy and restore: the disaster-recovery drill
// archives its WAL with pgBackRest, deletes its data directory and brings
// it back from the backup repository. It runs as the postgres user when
// the test runs as root and is stopped by pg_ctl at cleanup.
type Server struct {
	// URL is the server's postgres database, by TCP on loopback.
	URL string
	// Addr is host:port; Port its port.
	Addr string
	Port int
	// Dir is a private directory owned by the server's user: the data
	// directory, the socket and the server log live in it, and a test may
	// keep further files there (a backup repository, a config).
	Dir string
	// DataDir is the data directory, Dir/pgdata.
	DataDir string

	bin string
}

// StartServer initialises and starts a server with conf appended to its
// postgresql.auto.conf (settings such as archive_mode; the server's own
// listen, socket and size settings come first, so conf may override them).
func StartServer(t testing.TB, conf string) *Server {
	t.Helper()
	s := &Server{bin: binDir(t)}
	dir, err := os.MkdirTemp("", "pgtopo-server-")
	if err != nil {
		t.Fatal(err)
	}
	s.Dir, s.DataDir = dir, filepath.Join(dir, "pgdata")
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	chownToPostgres(t, dir)
	s.Port = freePorts(t, 1)[0]
	s.Addr = "127.0.0.1:" + strconv.Itoa(s.Port)
	s.URL = fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", s.Addr)

	s.Run(t, "initdb", "-D", s.DataDir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	appendFile(t, filepath.Join(s.DataDir, "postgresql.auto.conf"),
		"listen_addresses = '127.0.0.1'\nunix_socket_directories = '"+dir+"'\nmax_connections = 100\nshared_buffers = 32MB\n"+conf)
	s.Start(t)
	t.Cleanup(func() { _ = s.Command("pg_ctl", "-D", s.DataDir, "stop", "-m", "immediate", "-w").Run() })
	return s
}

// Start starts the server on its port (again, after Kill or a restore) and
// waits until it accepts connections; a server in archive recovery accepts
// them once recovery has ended (see Primary).
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.Run(t, "pg_ctl", "-D", s.DataDir, "-l", s.LogPath(), "-o", "-p "+strconv.Itoa(s.Port), "start", "-w", "-t", strconv.Itoa(int(waitLimit.Seconds())))
}

// Kill stops the server at once, as a crash would.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.Run(t, "pg_ctl", "-D", s.DataDir, "stop", "-m", "immediate", "-w")
}

// Stop shuts the server down cleanly (a checkpoint, then exit).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.Run(t, "pg_ctl", "-D", s.DataDir, "stop", "-m", "fast", "-w", "-t", strconv.Itoa(int(waitLimit.Seconds())))
}

// Primary waits until the server accepts writes (it left recovery).
func (s *Server) Primary(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for strings.TrimSpace(s.Psql(t, "SELECT pg_is_in_recovery()")) != "f" {
		if time.Now().After(deadline) {
			t.Fatalf("the server on %s is still in recovery (or down) after %s; its log:\n%s", s.Addr, waitLimit, s.Log(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Psql runs one statement through psql on the server's socket and returns
// its unaligned output, or "" when the server does not answer.
func (s *Server) Psql(t testing.TB, sql string) string {
	t.Helper()
	out, err := s.Command("psql", "-h", s.Dir, "-p", strconv.Itoa(s.Port), "-U", "postgres", "-d", "postgres", "-XAtc", sql).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// Run runs a PostgreSQL binary (a name in the server's bin directory) or
// any other program (an absolute path) as the server's user and fails t
// with its output when it fails.
func (s *Server) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := s.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Command is Run's command, not started: as the postgres user when we are
// root (initdb, postgres and pgBackRest refuse to run as root).
func (s *Server) Command(name string, args ...string) *exec.Cmd {
	path := name
	if !filepath.IsAbs(name) {
		path = filepath.Join(s.bin, name)
	}
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// Mkdir creates dir (mode 0700) owned by the server's user.
func (s *Server) Mkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	chownToPostgres(t, dir)
}

// WriteFile writes a file (mode 0600) owned by the server's user.
func (s *Server) WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	chownToPostgres(t, path)
}

// LogPath is the server log's path; Log its content so far.
func (s *Server) LogPath() string { return filepath.Join(s.Dir, "server.log") }

// Log returns what the server has logged so far (every start appends).
func (s *Server) Log(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	return string(b)
}
