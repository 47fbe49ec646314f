package telemetry_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/scripted"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/telemetry"
	"github.com/reinhq/rein/tool"
)

// sleepTool is a read-only tool that takes d to answer, so two calls of
// it in one round run side by side.
type sleepTool struct{ d time.Duration }

func (s sleepTool) Spec() tool.Spec {
	return tool.Spec{Name: "sleep", Description: "waits a moment", Access: tool.ReadOnly}
}

func (s sleepTool) Run(ctx context.Context, _ tool.Call) (tool.Output, error) {
	select {
	case <-time.After(s.d):
		return tool.Output{Text: "rested"}, nil
	case <-ctx.Done():
		return tool.Output{}, ctx.Err()
	}
}

// recorder is a handler with in-memory span and metric readers.
type recorder struct {
	h       *telemetry.Handler
	spans   *tracetest.SpanRecorder
	metrics *sdkmetric.ManualReader
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	mr := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(mr))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	h, err := telemetry.NewHandler(telemetry.Config{Provider: "openai", Model: "gpt-test", TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{h: h, spans: sr, metrics: mr}
}

func (r *recorder) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func (r *recorder) one(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	s := r.named(name)
	if len(s) != 1 {
		t.Fatalf("%d spans named %q, want 1 (all: %v)", len(s), name, names(r.spans.Ended()))
	}
	return s[0]
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// wantAttrs checks string, int and string-slice attributes of a span.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]any) {
	t.Helper()
	for k, w := range want {
		v, ok := attr(s, k)
		if !ok {
			t.Errorf("%s: no attribute %s", s.Name(), k)
			continue
		}
		var got any
		switch w.(type) {
		case string:
			got = v.AsString()
		case int:
			got = int(v.AsInt64())
		case bool:
			got = v.AsBool()
		case []string:
			got = v.AsStringSlice()
			if !slices.Equal(got.([]string), w.([]string)) {
				t.Errorf("%s: %s = %v, want %v", s.Name(), k, got, w)
			}
			continue
		}
		if got != w {
			t.Errorf("%s: %s = %v, want %v", s.Name(), k, got, w)
		}
	}
}

// TestTwoRoundTurnWithParallelCalls runs a real engine: a round with two
// 50 ms read-only calls, then the answer. The spans nest turn → round →
// chat / execute_tool, carry the GenAI attributes with per-round tokens,
// and the two tool spans overlap in time.
func TestTwoRoundTurnWithParallelCalls(t *testing.T) {
	rec := newRecorder(t)
	model := scripted.New(scripted.Script{Rounds: []scripted.Round{
		{Text: "Resting twice.", Calls: []scripted.Call{{ID: "c1", Name: "sleep", Args: map[string]any{"n": 1}}, {ID: "c2", Name: "sleep", Args: map[string]any{"n": 2}}},
			Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}},
		{Text: "Both rested.", Usage: llm.Usage{InputTokens: 150, OutputTokens: 7}},
	}})
	e, err := loop.New(loop.Options{Model: model, ModelName: "gpt-test", Tools: tool.NewSet(sleepTool{50 * time.Millisecond}), Events: rec.h})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := e.Run(ctx, loop.Turn{ThreadID: "thread_1", Input: []llm.Item{llm.UserText("rest twice")}})
	if err != nil || out.Status != loop.StatusCompleted {
		t.Fatalf("turn: %v %v", out, err)
	}

	turn := rec.one(t, "invoke_agent rein")
	rounds := rec.named("round")
	chats := rec.named("chat gpt-test")
	tools := rec.named("execute_tool sleep")
	if len(rounds) != 2 || len(chats) != 2 || len(tools) != 2 {
		t.Fatalf("spans: %v; want 2 rounds, 2 chats, 2 tool calls", names(rec.spans.Ended()))
	}
	slices.SortFunc(rounds, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	slices.SortFunc(chats, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })

	for _, s := range rec.spans.Ended() {
		if s.SpanContext().TraceID() != turn.SpanContext().TraceID() {
			t.Errorf("%s is in another trace", s.Name())
		}
		if s.EndTime().Before(s.StartTime()) {
			t.Errorf("%s ends before it starts", s.Name())
		}
	}
	if turn.Parent().IsValid() {
		t.Errorf("the turn span has a parent")
	}
	for i, r := range rounds {
		if r.Parent().SpanID() != turn.SpanContext().SpanID() {
			t.Errorf("round %d is not under the turn", i+1)
		}
		if chats[i].Parent().SpanID() != r.SpanContext().SpanID() {
			t.Errorf("chat %d is not under round %d", i+1, i+1)
		}
		if chats[i].StartTime().Before(r.StartTime()) || chats[i].EndTime().After(r.EndTime()) {
			t.Errorf("chat %d is outside its round", i+1)
		}
	}
	for _, s := range tools {
		if s.Parent().SpanID() != rounds[0].SpanContext().SpanID() {
			t.Errorf("tool %v is not under round 1", attrOr(s, "gen_ai.tool.call.id"))
		}
		if s.EndTime().Sub(s.StartTime()) < 50*time.Millisecond {
			t.Errorf("tool span lasts %v, the tool slept 50ms", s.EndTime().Sub(s.StartTime()))
		}
		if s.StartTime().Before(rounds[0].StartTime()) || s.EndTime().After(rounds[0].EndTime()) {
			t.Errorf("tool span outside its round")
		}
	}
	a, b := tools[0], tools[1]
	if !(a.StartTime().Before(b.EndTime()) && b.StartTime().Before(a.EndTime())) {
		t.Errorf("the parallel tool spans do not overlap: %v–%v and %v–%v", a.StartTime(), a.EndTime(), b.StartTime(), b.EndTime())
	}
	ids := []string{attrOr(a, "gen_ai.tool.call.id"), attrOr(b, "gen_ai.tool.call.id")}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"c1", "c2"}) {
		t.Errorf("tool call ids %v, want c1 c2", ids)
	}
	for _, s := range tools {
		wantAttrs(t, s, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "sleep", "rein.tool.status": "ok"})
	}

	wantAttrs(t, turn, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "thread_1",
		"rein.turn.status": "completed", "rein.turn.stop_reason": "finished", "rein.turn.rounds": 2,
		"gen_ai.usage.input_tokens": 250, "gen_ai.usage.output_tokens": 27,
	})
	wantAttrs(t, rounds[0], map[string]any{"rein.round": 1, "rein.round.phase": "explore", "rein.round.role": "narration"})
	wantAttrs(t, rounds[1], map[string]any{"rein.round": 2, "rein.round.phase": "explore", "rein.round.role": "finish"})
	wantAttrs(t, chats[0], map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test",
		"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20,
		"gen_ai.response.finish_reasons": []string{"tool_calls"},
	})
	// The usage event is cumulative: round 2's own share is the difference.
	wantAttrs(t, chats[1], map[string]any{
		"gen_ai.usage.input_tokens": 150, "gen_ai.usage.output_tokens": 7,
		"gen_ai.response.finish_reasons": []string{"stop"},
	})
	for _, s := range rec.spans.Ended() {
		if s.Status().Code == codes.Error {
			t.Errorf("%s has an error status: %s", s.Name(), s.Status().Description)
		}
	}

	// Metrics: tokens by type, durations by operation.
	var rm metricdata.ResourceMetrics
	if err := rec.metrics.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]int64{}
	ops := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "gen_ai.client.token.usage":
				for _, dp := range m.Data.(metricdata.Histogram[int64]).DataPoints {
					v, _ := dp.Attributes.Value("gen_ai.token.type")
					tokens[v.AsString()] += dp.Sum
				}
			case "gen_ai.client.operation.duration":
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					v, _ := dp.Attributes.Value("gen_ai.operation.name")
					ops[v.AsString()] += dp.Count
				}
			}
		}
	}
	if tokens["input"] != 250 || tokens["output"] != 27 {
		t.Errorf("token usage metric %v, want input 250 output 27", tokens)
	}
	if ops["chat"] != 2 || ops["execute_tool"] != 2 {
		t.Errorf("operation duration counts %v, want chat 2 execute_tool 2", ops)
	}
}

func attrOr(s sdktrace.ReadOnlySpan, key string) string {
	v, _ := attr(s, key)
	return v.AsString()
}
