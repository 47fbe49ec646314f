package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/reinhq/rein/llm"
)

// instruments are the GenAI client metrics: tokens per model call and the
// duration of each operation (model calls and tool calls).
type instruments struct {
	tokenUsage genaiconv.ClientTokenUsage
	opDuration genaiconv.ClientOperationDuration
}

func newInstruments(mp metric.MeterProvider) (instruments, error) {
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	m := mp.Meter(ScopeName)
	tu, err := genaiconv.NewClientTokenUsage(m)
	if err != nil {
		return instruments{}, fmt.Errorf("telemetry: token usage histogram: %w", err)
	}
	od, err := genaiconv.NewClientOperationDuration(m)
	if err != nil {
		return instruments{}, fmt.Errorf("telemetry: operation duration histogram: %w", err)
	}
	return instruments{tokenUsage: tu, opDuration: od}, nil
}

// tokens records one model call's input and output tokens.
func (in instruments) tokens(ctx context.Context, cfg Config, u llm.Usage) {
	attrs := modelAttr(cfg)
	op := genaiconv.OperationNameAttr(semconv.GenAIOperationNameChat.Value.AsString())
	prov := genaiconv.ProviderNameAttr(cfg.Provider)
	in.tokenUsage.Record(ctx, u.InputTokens, op, prov, genaiconv.TokenTypeInput, attrs...)
	in.tokenUsage.Record(ctx, u.OutputTokens, op, prov, genaiconv.TokenTypeOutput, attrs...)
}

// duration records how long an operation (chat, execute_tool) took, with
// the class of error it ended with, if any.
func (in instruments) duration(ctx context.Context, cfg Config, op string, d time.Duration, errType string) {
	attrs := modelAttr(cfg)
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
	}
	in.opDuration.Record(ctx, d.Seconds(), genaiconv.OperationNameAttr(op), genaiconv.ProviderNameAttr(cfg.Provider), attrs...)
}

func modelAttr(cfg Config) []attribute.KeyValue {
	if cfg.Model == "" {
		return nil
	}
	return []attribute.KeyValue{semconv.GenAIRequestModel(cfg.Model)}
}
