package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// The standard variables that switch export on. Without any of them rein
// exports nothing and makes no network attempt: the exporters' own default
// (localhost:4318) is never dialled by surprise.
const (
	envEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envMetricsEndpoint = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
	envProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envMetricsProtocol = "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"
	envSDKDisabled     = "OTEL_SDK_DISABLED"
)

// Export is the OTLP export of a process, set up from the environment. The
// zero value (and a nil *Export) exports nothing.
type Export struct {
	// TracerProvider is nil when traces are not exported.
	TracerProvider trace.TracerProvider
	// MeterProvider is nil when metrics are not exported.
	MeterProvider metric.MeterProvider

	shutdown []func(context.Context) error
}

// Enabled reports whether anything is exported.
func (x *Export) Enabled() bool {
	return x != nil && (x.TracerProvider != nil || x.MeterProvider != nil)
}

// Shutdown flushes what is buffered and stops the exporters; call it before
// the process exits, with a deadline.
func (x *Export) Shutdown(ctx context.Context) error {
	if x == nil {
		return nil
	}
	var errs []error
	for _, f := range x.shutdown {
		if err := f(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	x.shutdown = nil
	return errors.Join(errs...)
}

// FromEnv sets up OTLP/HTTP export of traces and metrics from the standard
// OTEL_EXPORTER_OTLP_* variables: traces when OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, metrics when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is.
// Headers, timeouts, compression and certificates come from the same
// variables, read by the exporters; the resource from OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES (service.name defaults to "rein"). With none of
// the endpoints set, or OTEL_SDK_DISABLED=true, it returns an Export that
// does nothing.
func FromEnv(ctx context.Context, version string) (*Export, error) {
	x := &Export{}
	if strings.EqualFold(os.Getenv(envSDKDisabled), "true") {
		return x, nil
	}
	traces := os.Getenv(envEndpoint) != "" || os.Getenv(envTracesEndpoint) != ""
	metrics := os.Getenv(envEndpoint) != "" || os.Getenv(envMetricsEndpoint) != ""
	if !traces && !metrics {
		return x, nil
	}
	if err := checkProtocol(envTracesProtocol, traces); err != nil {
		return nil, err
	}
	if err := checkProtocol(envMetricsProtocol, metrics); err != nil {
		return nil, err
	}
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName("rein"))}
	if version != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(version)))
	}
	// From the environment last, so OTEL_SERVICE_NAME wins over the default.
	attrs = append(attrs, resource.WithTelemetrySDK(), resource.WithFromEnv())
	res, err := resource.New(ctx, attrs...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	if traces {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		x.TracerProvider = tp
		x.shutdown = append(x.shutdown, tp.Shutdown)
	}
	if metrics {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			_ = x.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: OTLP metric exporter: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		x.MeterProvider = mp
		x.shutdown = append(x.shutdown, mp.Shutdown)
	}
	return x, nil
}

// checkProtocol refuses a protocol rein does not speak rather than export
// to the wrong port in silence: the signal's own variable, else the
// general one, must be http/protobuf (the default) when the signal is on.
func checkProtocol(signalVar string, on bool) error {
	if !on {
		return nil
	}
	name, p := signalVar, os.Getenv(signalVar)
	if p == "" {
		name, p = envProtocol, os.Getenv(envProtocol)
	}
	if p == "" || p == "http/protobuf" {
		return nil
	}
	return fmt.Errorf("telemetry: %s=%s: rein exports OTLP over HTTP only; set it to http/protobuf (port 4318) or unset it", name, p)
}
