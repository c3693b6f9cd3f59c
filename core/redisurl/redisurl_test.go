package redisurl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redisurl"
)

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want redisurl.Topology
	}{
		{"redis://127.0.0.1:6379/3", redisurl.Topology{Mode: redisurl.Single, Addrs: []string{"127.0.0.1:6379"}, DB: 3}},
		{"rediss://u:p%40ss@cache:6380", redisurl.Topology{Mode: redisurl.Single, Addrs: []string{"cache:6380"}, Username: "u", Password: "p@ss", TLS: true}},
		{"redis-sentinel://:pw@s1:26379,s2:26379,[::1]:26380/2?master=mymaster&sentinel_password=sp",
			redisurl.Topology{Mode: redisurl.Sentinel, Addrs: []string{"s1:26379", "s2:26379", "[::1]:26380"}, MasterName: "mymaster", Password: "pw", SentinelPassword: "sp", DB: 2}},
		{"redis-cluster://n1:7000,n2:7001?tls=true", redisurl.Topology{Mode: redisurl.Cluster, Addrs: []string{"n1:7000", "n2:7001"}, TLS: true}},
	}
	for _, c := range cases {
		got, err := redisurl.Parse(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}

func TestParseRefusesWithoutEchoingTheSecret(t *testing.T) {
	t.Parallel()
	for in, why := range map[string]string{
		"localhost:6379":                           "no scheme",
		"memcache://:hunter2@h:1":                  "scheme",
		"redis://:hunter2@h1:1,h2:2":               "takes one address",
		"redis://:hunter2@h":                       "not host:port",
		"redis://:hunter2@h:0":                     "no valid port",
		"redis://:hunter2@h:1/zero":                "database number",
		"redis-sentinel://:hunter2@s1:26379":       "master",
		"redis-cluster://:hunter2@n1:7000/1":       "only database 0",
		"redis-cluster://:hunter2@n1:7000,,n2:700": "address 2",
	} {
		_, err := redisurl.Parse(in)
		require.Error(t, err, in)
		require.True(t, errors.Is(err, redisurl.ErrInvalid), in)
		require.Contains(t, err.Error(), why, in)
		require.False(t, strings.Contains(err.Error(), "hunter2"), "%s: the error repeats the password: %v", in, err)
	}
}
