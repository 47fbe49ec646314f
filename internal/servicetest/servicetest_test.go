package servicetest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a helper gave up.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls fn on a recorder in a goroutine of its own (a helper that
// gives up ends it, as testing does).
func run(fn func(testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r
}

// A service that does not answer skips the test, saying which and how to
// reach it; under REIN_REQUIRE_SERVICES=1 it fails it instead.
func TestMissingServiceSkipsOrFails(t *testing.T) {
	t.Setenv(EnvPostgres, "postgres://rein@127.0.0.1:1/none?connect_timeout=5")
	t.Setenv(EnvRedis, "127.0.0.1:1")
	for _, tt := range []struct {
		name string
		fn   func(testing.TB)
	}{
		{"PostgreSQL", func(tb testing.TB) { Postgres(tb) }},
		{"Redis", func(tb testing.TB) { Redis(tb) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvRequire, "")
			r := run(tt.fn)
			if r.skipped == "" || r.failed != "" || !strings.Contains(r.skipped, tt.name) {
				t.Errorf("without %s: skipped %q, failed %q; want a skip naming %s", EnvRequire, r.skipped, r.failed, tt.name)
			}
			t.Setenv(EnvRequire, "1")
			r = run(tt.fn)
			if r.failed == "" || r.skipped != "" || !strings.Contains(r.failed, EnvRequire) {
				t.Errorf("with %s=1: skipped %q, failed %q; want a failure", EnvRequire, r.skipped, r.failed)
			}
		})
	}
}

// Each test gets a schema of its own: two calls never share one.
func TestPostgresSchemasAreTheTestsOwn(t *testing.T) {
	a, b := Postgres(t), Postgres(t)
	if a == b || !strings.Contains(a, "search_path=rein_test_") {
		t.Errorf("schemas %q and %q", a, b)
	}
}
