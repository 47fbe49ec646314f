// Package servicetest gives tests the services a fleet of rein nodes
// shares, PostgreSQL and Redis, each test its own part of them so parallel
// packages never collide: a fresh PostgreSQL schema (dropped when the test
// ends), a Redis key prefix. A test on a machine without the service skips
// saying why; with REIN_REQUIRE_SERVICES=1 (CI sets it) it fails instead,
// so a missing service never passes as green.
package servicetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables the tests read.
const (
	// EnvRequire, set to 1, makes a missing service fail the test.
	EnvRequire = "REIN_REQUIRE_SERVICES"
	// EnvPostgres is the PostgreSQL URL tests use (default
	// DefaultPostgres).
	EnvPostgres = "REIN_TEST_POSTGRES"
	// EnvRedis is the Redis address tests use (default DefaultRedis).
	EnvRedis = "REIN_TEST_REDIS"
)

// Defaults: the services as this project's machines run them.
const (
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	DefaultRedis    = "127.0.0.1:6379"
)

// missing skips the test, or fails it when services are required.
func missing(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s is required (%s=1) and does not answer: %v", what, EnvRequire, err)
	}
	t.Skipf("%s does not answer (%v); start it, or set %s to reach it", what, err, envOf(what))
}

func envOf(what string) string {
	if strings.HasPrefix(what, "Redis") {
		return EnvRedis
	}
	return EnvPostgres
}

// PostgresURL returns the URL of the test database without a schema of
// the test's own: for tests that only connect.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvPostgres)
	if u == "" {
		u = DefaultPostgres
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		missing(t, "PostgreSQL at "+redactURL(u), err)
	}
	conn.Close(ctx)
	return u
}

// Postgres returns a URL of the test database whose connections use a
// fresh schema of the test's own (search_path), dropped with everything
// in it when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	schema := "rein_test_" + strings.ToLower(rand.Text()[:12])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		missing(t, "PostgreSQL at "+redactURL(base), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	return WithSchema(base, schema)
}

// WithSchema returns url with its connections' search_path set to schema.
func WithSchema(raw, schema string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Redis returns the address of the test Redis and a key prefix of the
// test's own.
func Redis(t testing.TB) (addr, prefix string) {
	t.Helper()
	addr = os.Getenv(EnvRedis)
	if addr == "" {
		addr = DefaultRedis
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		missing(t, "Redis at "+addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		missing(t, "Redis at "+addr, err)
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "+PONG") {
		missing(t, "Redis at "+addr, fmt.Errorf("PING answered %q: %v", buf[:n], err))
	}
	return addr, "rein_test_" + strings.ToLower(rand.Text()[:12]) + ":"
}

// redactURL drops a password from a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
