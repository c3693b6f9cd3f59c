// Package redisurl reads REDIS_URL, which names one of three Redis
// topologies, so that the API's rueidis client and Asynq's client and
// server are configured from the one setting:
//
//	redis://[user:password@]host:port[/db]              one node (rediss:// for TLS)
//	redis-sentinel://[user:password@]s1:26379,s2:26379,s3:26379[/db]?master=mymaster[&sentinel_password=...]
//	redis-cluster://[user:password@]n1:7000,n2:7001,n3:7002   seed nodes; a cluster has only db 0
//
// The user and password are the data nodes' (the master's or the
// cluster's); sentinels that require their own password take
// sentinel_password. Add tls=true to the query of the sentinel and
// cluster forms for TLS. The URL is parsed by hand because net/url refuses
// a comma-separated host list.
package redisurl

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Mode is the topology REDIS_URL names.
type Mode int

const (
	Single   Mode = iota // one node (or a proxy in front of several)
	Sentinel             // a master found through sentinels, followed across failovers
	Cluster              // a Redis Cluster, found through seed nodes
)

func (m Mode) String() string {
	switch m {
	case Sentinel:
		return "sentinel"
	case Cluster:
		return "cluster"
	default:
		return "single"
	}
}

// Topology is a parsed REDIS_URL.
type Topology struct {
	Mode             Mode
	Addrs            []string // host:port of the node, the sentinels or the cluster seeds
	MasterName       string   // Sentinel: the master set's name
	Username         string
	Password         string
	SentinelPassword string
	DB               int
	TLS              bool
}

// ErrInvalid is wrapped by every Parse error. The messages never repeat
// the URL: it holds a password.
var ErrInvalid = errors.New("not a valid Redis URL (value hidden)")

// Forms is the one-line help printed with a parse error.
const Forms = "redis://host:port/db, redis-sentinel://s1:26379,s2:26379/db?master=name or redis-cluster://n1:7000,n2:7001"

// Parse reads raw in one of the three forms.
func Parse(raw string) (Topology, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return Topology{}, invalid("no scheme")
	}
	var t Topology
	switch scheme {
	case "redis":
	case "rediss":
		t.TLS = true
	case "redis-sentinel":
		t.Mode = Sentinel
	case "redis-cluster":
		t.Mode = Cluster
	default:
		return Topology{}, invalid("scheme %q is not redis, rediss, redis-sentinel or redis-cluster", scheme)
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		info, err := url.Parse("x://" + authority[:at+1] + "h")
		if err != nil || info.User == nil {
			return Topology{}, invalid("the user and password are not URL-encoded")
		}
		t.Username = info.User.Username()
		t.Password, _ = info.User.Password()
		authority = authority[at+1:]
	}
	for _, a := range strings.Split(authority, ",") {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return Topology{}, invalid("address %d is not host:port", len(t.Addrs)+1)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return Topology{}, invalid("address %d has no valid port", len(t.Addrs)+1)
		}
		t.Addrs = append(t.Addrs, a)
	}
	if t.Mode == Single && len(t.Addrs) != 1 {
		return Topology{}, invalid("%s:// takes one address; use redis-sentinel:// or redis-cluster:// for several", scheme)
	}
	u, err := url.Parse("x://h" + tail)
	if err != nil {
		return Topology{}, invalid("the path or query is malformed")
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		db, err := strconv.Atoi(p)
		if err != nil || db < 0 {
			return Topology{}, invalid("the path must be the database number")
		}
		t.DB = db
	}
	q := u.Query()
	switch t.Mode {
	case Sentinel:
		t.MasterName = q.Get("master")
		if t.MasterName == "" {
			return Topology{}, invalid("redis-sentinel:// needs ?master=<master set name>")
		}
		t.SentinelPassword = q.Get("sentinel_password")
	case Cluster:
		if t.DB != 0 {
			return Topology{}, invalid("a Redis Cluster has only database 0; drop the path")
		}
	}
	if t.Mode != Single {
		t.TLS = q.Get("tls") == "true"
	}
	return t, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s; expected %s", ErrInvalid, fmt.Sprintf(format, args...), Forms)
}
