package postgres

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// OpenError is why Open could not open a pool, in sentences: what went
// wrong with the server the variable Env names, and what to do. Its Error
// is one line without the URL's password; the driver's error stays
// reachable through Unwrap (IsUnavailable still classifies it).
//
// The binaries' start-up failure line (internal/appkit.LogStartFailure)
// prints Dependency, Variable, Error and Hint instead of the dependency
// chain that led to the pool.
type OpenError struct {
	// Env is the variable the URL came from (Config.Env).
	Env string
	// Target is host:port, database and user (no password), when known.
	Target string
	// Reason says what went wrong.
	Reason string
	// Hint says what to do.
	Hint string
	// Err is the driver's error.
	Err error
}

func (e *OpenError) Error() string {
	if e.Target == "" {
		return "cannot open postgres (" + e.Env + "): " + e.Reason
	}
	return "cannot open postgres at " + e.Target + " (" + e.Env + "): " + e.Reason
}

func (e *OpenError) Unwrap() error { return e.Err }

// Dependency, Variable and Fix make *OpenError an
// appkit.DependencyError.
func (e *OpenError) Dependency() string { return "postgres" }

// Variable is Env.
func (e *OpenError) Variable() string { return e.Env }

// Fix is Hint.
func (e *OpenError) Fix() string { return e.Hint }

// SQLSTATE codes Open tells apart.
const (
	codeInvalidPassword   = "28P01"
	codeInvalidAuth       = "28000"
	codeNoDatabase        = "3D000"
	codeTooManyConns      = "53300"
	codeCannotConnectNow  = "57P03"
	codeProtocolViolation = "08P01"
	codeNoPrivilege       = "42501"
	codeAdminShutdown     = "57P01"
)

// openError turns a failed first connection into an *OpenError.
func openError(cfg Config, pcfg *pgx.ConnConfig, err error) *OpenError {
	v := cfg.Env
	e := &OpenError{Env: v, Err: err, Target: target(pcfg)}
	var pgErr *pgconn.PgError
	var dnsErr *net.DNSError
	var certErr *x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	var ne net.Error
	switch {
	case errors.As(err, &pgErr):
		e.Reason, e.Hint = serverRefusal(v, pcfg, pgErr)
	case errors.As(err, &dnsErr):
		e.Reason = "the host name " + strconv.Quote(dnsErr.Name) + " does not resolve"
		e.Hint = "fix the host in " + v + ", or check this machine's DNS"
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Reason = "the connection was refused: nothing listens on that address"
		e.Hint = "start Postgres (or the pooler) there, or set " + v + " to the address it listens on"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		e.Reason = "the host is unreachable from here"
		e.Hint = "check the host in " + v + " and the network between this process and the database (routes, firewall, security groups)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		e.Reason = "no answer within " + cfg.PingTimeout.String()
		e.Hint = "check that " + v + " names a reachable Postgres and that a firewall or security group does not drop the connection; a saturated server or pooler answers late too"
	case errors.Is(err, context.Canceled):
		e.Reason = "the start was cancelled before the database answered"
		e.Hint = "nothing to fix if the process was being stopped"
	case errors.As(err, &certErr), errors.As(err, &hostErr), errors.As(err, &invalidCert):
		e.Reason = "the server's TLS certificate was not accepted (" + tlsCause(err) + ")"
		e.Hint = "give the server's CA with sslrootcert=/path/ca.pem in " + v + ", or use sslmode=require to encrypt without verifying"
	case strings.Contains(err.Error(), "server refused TLS connection"):
		e.Reason = "the server does not offer TLS, and " + v + " requires it (sslmode)"
		e.Hint = "enable TLS on the server, or set sslmode=disable in " + v + " for a server on a trusted network"
	case strings.Contains(err.Error(), "tls:"):
		e.Reason = "the TLS handshake failed (" + tlsCause(err) + ")"
		e.Hint = "check sslmode, sslrootcert, sslcert and sslkey in " + v
	default:
		e.Reason = "the connection failed (" + driverCause(err) + ")"
		e.Hint = "check that " + v + " points at a running Postgres that this process can reach"
	}
	return e
}

// serverRefusal explains an error the server (or a pooler) sent while
// the connection was being set up.
func serverRefusal(v string, pcfg *pgx.ConnConfig, e *pgconn.PgError) (reason, hint string) {
	msg := e.Message + " (SQLSTATE " + e.Code + ")"
	switch {
	case e.Code == codeInvalidPassword:
		return "the server refused the password of role " + strconv.Quote(pcfg.User) + ": " + msg,
			"set the role's password in " + v + " (percent-encode special characters), or the password of the role in the pooler's auth_file"
	case e.Code == codeInvalidAuth && strings.Contains(e.Message, "pg_hba.conf"):
		return "the server's pg_hba.conf has no rule that lets role " + strconv.Quote(pcfg.User) + " connect from here: " + msg,
			"add a pg_hba.conf rule for this host, role and database; if the server only accepts TLS, set sslmode=require in " + v
	case e.Code == codeInvalidAuth:
		return "the server refused role " + strconv.Quote(pcfg.User) + ": " + msg,
			"check the user in " + v + " (CREATE ROLE ... LOGIN if it is missing)"
	case e.Code == codeNoDatabase:
		return "database " + strconv.Quote(pcfg.Database) + " does not exist: " + msg,
			"create it (CREATE DATABASE " + pgx.Identifier{pcfg.Database}.Sanitize() + ") or fix the database name in " + v + ", then run migrate up"
	case e.Code == codeTooManyConns:
		return "the server has no free connection slot: " + msg,
			"lower the number of connections (replicas x pools x their size), raise max_connections, or put a pooler in transaction mode in front (README \"Behind a connection pooler\")"
	case e.Code == codeCannotConnectNow || e.Code == codeAdminShutdown:
		return "the server does not accept connections now (starting, stopping or recovering): " + msg,
			"wait until it is up and start again; if " + v + " names a standby, point it at the primary"
	case e.Code == codeNoPrivilege:
		return "role " + strconv.Quote(pcfg.User) + " may not connect to database " + strconv.Quote(pcfg.Database) + ": " + msg,
			"GRANT CONNECT ON DATABASE " + pgx.Identifier{pcfg.Database}.Sanitize() + " TO the role, or use another role in " + v
	case e.Code == codeProtocolViolation && strings.Contains(e.Message, "unsupported startup parameter"):
		return "the server, a connection pooler, refused a startup parameter: " + msg,
			"remove that parameter from " + v + " (options=-c ..., or a query parameter that is no connection setting); " +
				"set a server setting per role instead (ALTER ROLE ... SET), or add it to the pooler's ignore_startup_parameters"
	case e.Code == codeProtocolViolation:
		return "the server or a pooler in front of it refused the connection: " + msg,
			"check " + v + ": the database must exist in the pooler's [databases] and the pooler must reach Postgres"
	}
	return "the server refused the connection: " + msg, "check the user, database and options in " + v
}

// target is host:port, database and user (no password) of pcfg.
func target(pcfg *pgx.ConnConfig) string {
	host := pcfg.Host
	if strings.HasPrefix(host, "/") {
		host = "socket " + host
	} else {
		host = net.JoinHostPort(host, strconv.Itoa(int(pcfg.Port)))
	}
	if n := len(pcfg.Fallbacks) - 1; n > 0 { // the first fallback is Host itself
		host = fmt.Sprintf("%s (and %d more hosts)", host, n)
	}
	return fmt.Sprintf("%s, database %q, user %q", host, pcfg.Database, pcfg.User)
}

// tlsCause is the innermost error's text.
func tlsCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// driverCause is the driver's error without pgx's "failed to connect to
// `user=... database=...`: host (addr):" prefix, which target already
// says.
func driverCause(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "): "); i >= 0 && strings.Contains(s[:i], "failed to connect") {
		s = s[i+3:]
	}
	return s
}
