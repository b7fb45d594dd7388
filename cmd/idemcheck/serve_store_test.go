package main

import (
	"context"
	"net"
	"strings"
	"testing"
)

// A store that cannot be opened is a configuration error: one line naming
// the flag and the reason, exit 2, before anything listens.
func TestServeStoreOpenErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String() // nothing will answer here once closed
	l.Close()
	cases := []struct {
		name, explain string
		kind          string
		flags         storeFlags
		want          string
	}{
		{"pg-down", "a PostgreSQL that is not running is named with its address", "postgres",
			storeFlags{DSN: "postgres://postgres@" + down + "/x?sslmode=disable"}, "--store postgres: postgres " + down},
		{"pg-bad-dsn", "an unparsable DSN says so", "postgres", storeFlags{DSN: "bogus:://x"}, "invalid DSN"},
		{"pg-no-dsn", "--store postgres needs --dsn", "postgres", storeFlags{}, "--dsn: required"},
		{"redis-down", "a Redis that is not running is named with its address", "redis",
			storeFlags{RedisURL: "redis://" + down + "/0"}, "--store redis: redis " + down},
		{"redis-bad-url", "a URL that is not redis:// says so", "redis", storeFlags{RedisURL: "http://x"}, "invalid URL"},
		{"redis-no-url", "--store redis needs --redis-url", "redis", storeFlags{}, "--redis-url: required"},
		{"unknown", "an unknown store lists the known ones", "mongo", storeFlags{}, "known: memory, postgres, redis"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, _, err := openStore(context.Background(), c.kind, &c.flags)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%s: openStore error %q, want one line containing %q", c.explain, err, c.want)
			}
		})
	}
	code := run([]string{"serve", "--store", "postgres", "--dsn", "postgres://postgres@" + down + "/x?sslmode=disable", "--addr", "127.0.0.1:0"})
	if code != exitUsage {
		t.Fatalf("serve with PostgreSQL down exited %d, want %d", code, exitUsage)
	}
}
