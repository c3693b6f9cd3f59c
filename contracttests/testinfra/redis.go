package testinfra

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
)

// Redis is one test's private slice of Redis: a client and a key prefix.
type Redis struct {
	// URL is the Redis server (shared; isolation is by Prefix and queue names).
	URL string
	// Prefix is unique to this test ("t:<random>:"); use it for every key.
	Prefix string
	// Client is a rueidis client closed at cleanup.
	Client rueidis.Client
	// Addr ("host:port"), DB, Username and Password are URL's parts, for a
	// test that builds another client, e.g. go-redis:
	//
	//	c := goredis.NewClient(&goredis.Options{Addr: r.Addr, DB: r.DB, Username: r.Username, Password: r.Password})
	//
	// Its keys must start with Prefix; cleanup deletes only those.
	Addr     string
	DB       int
	Username string
	Password string
}

// NewRedis returns a client and a fresh prefix. At cleanup every key under
// the prefix is deleted with SCAN + UNLINK; nothing else is touched.
func NewRedis(t testing.TB) *Redis {
	t.Helper()
	url := resolveRedis(t)
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		t.Fatalf("parse %s: %v. Fix: use the form redis://host:port/db", EnvRedisURL, err)
	}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("connect to %s (%s): %v. Fix: make sure Redis answers there", EnvRedisURL, url, err)
	}
	r := &Redis{URL: url, Prefix: "t:" + randomHex(6) + ":", Client: c, DB: opt.SelectDB, Username: opt.Username, Password: opt.Password}
	if len(opt.InitAddress) > 0 {
		r.Addr = opt.InitAddress[0]
	}
	t.Cleanup(func() {
		defer c.Close()
		if err := DeletePrefix(context.Background(), c, r.Prefix); err != nil {
			t.Errorf("clean redis prefix %s: %v", r.Prefix, err)
		}
	})
	return r
}

// QueueName returns an asynq queue name unique to this test.
func (r *Redis) QueueName(base string) string { return base + "_" + r.Prefix[2:len(r.Prefix)-1] }

// DeletePrefix unlinks every key that starts with prefix.
func DeletePrefix(ctx context.Context, c rueidis.Client, prefix string) error {
	var cursor uint64
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(prefix+"*").Count(500).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		if len(e.Elements) > 0 {
			if err := c.Do(ctx, c.B().Unlink().Key(e.Elements...).Build()).Error(); err != nil {
				return err
			}
		}
		if e.Cursor == 0 {
			return nil
		}
		cursor = e.Cursor
	}
}
