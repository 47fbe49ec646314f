package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/event"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/telemetry"
)

// clearEnv unsets every variable FromEnv looks at, for the test's length.
func clearEnv(t *testing.T) {
	for _, k := range []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
		"OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	} {
		t.Setenv(k, "")
	}
}

// collector is a local OTLP/HTTP endpoint that counts the paths posted to.
type collector struct {
	*httptest.Server
	mu    sync.Mutex
	posts map[string]int
}

func newCollector(t *testing.T) *collector {
	c := &collector{posts: map[string]int{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.posts[r.Method+" "+r.URL.Path]++
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.posts[key]
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name        string
		env         map[string]string
		wantTraces  bool
		wantMetrics bool
		wantErr     string
	}{
		{name: "nothing set exports nothing"},
		{name: "the SDK switched off exports nothing", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "@", "OTEL_SDK_DISABLED": "true"}},
		{name: "the general endpoint exports both", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "@"}, wantTraces: true, wantMetrics: true},
		{name: "the traces endpoint exports traces only", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "@/v1/traces"}, wantTraces: true},
		{name: "the metrics endpoint exports metrics only", env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "@/v1/metrics"}, wantMetrics: true},
		{name: "grpc is refused, not dialled on the wrong port", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "@", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		{name: "a signal's own protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "@/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, wantTraces: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			c := newCollector(t)
			for k, v := range tt.env {
				t.Setenv(k, strings.ReplaceAll(v, "@", c.URL))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			x, err := telemetry.FromEnv(ctx, "test")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := x.TracerProvider != nil; got != tt.wantTraces {
				t.Errorf("traces on = %v, want %v", got, tt.wantTraces)
			}
			if got := x.MeterProvider != nil; got != tt.wantMetrics {
				t.Errorf("metrics on = %v, want %v", got, tt.wantMetrics)
			}
			if x.Enabled() != (tt.wantTraces || tt.wantMetrics) {
				t.Errorf("Enabled() = %v", x.Enabled())
			}
			h, err := telemetry.NewHandler(telemetry.Config{Provider: "openai", Model: "m", TracerProvider: x.TracerProvider, MeterProvider: x.MeterProvider})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range concat(one(at(0, event.Event{Type: event.TurnStarted})),
				round(1, 1, llm.PhaseExplore, event.RoleFinish, "stop", usage(3, 4)),
				one(completed(20, "completed", "finished", ""))) {
				h.Handle(e)
			}
			if err := x.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			traces, metrics := c.count("POST /v1/traces") > 0, c.count("POST /v1/metrics") > 0
			if traces != tt.wantTraces || metrics != tt.wantMetrics {
				t.Errorf("posted traces %v metrics %v, want %v %v (all: %v)", traces, metrics, tt.wantTraces, tt.wantMetrics, c.posts)
			}
		})
	}
}

func TestProviderName(t *testing.T) {
	for in, want := range map[string]string{"openai": "openai", "openai-chat": "openai", "anthropic": "anthropic", "deepseek": "deepseek", "local": "local"} {
		if got := telemetry.ProviderName(in); got != want {
			t.Errorf("ProviderName(%q) = %q, want %q", in, got, want)
		}
	}
}
