package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is the service.name of memindex's traces unless
// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const DefaultServiceName = "memindex"

// Enabled reports whether the standard OpenTelemetry variables ask
// for traces: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) with
// no exporter named. OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none
// turn tracing off. Unlike the SDK default, no variable means off: memindex
// sends nothing anywhere unless told to.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "otlp":
	case "none":
		return false, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return false, nil
		}
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: memindex exports traces with otlp (or none); set OTEL_TRACES_EXPORTER=otlp", exp)
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch p := strings.TrimSpace(getenv(v)); p {
		case "", "http/protobuf", "http/json":
		default:
			return false, fmt.Errorf("%s=%q: memindex exports traces over OTLP/HTTP; set http/protobuf (or http/json) and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (usually 4318)", v, p)
		}
	}
	return true, nil
}

// NewTracerProvider builds the tracer provider the standard OTEL_* variables
// ask for (see Enabled, which reads them through getenv): an OTLP/HTTP
// exporter configured by the OTEL_EXPORTER_OTLP_* variables of the process
// environment, batched (OTEL_BSP_*), sampled as OTEL_TRACES_SAMPLER says,
// with service.name from OTEL_SERVICE_NAME (default "memindex"),
// service.version version, and OTEL_RESOURCE_ATTRIBUTES. When tracing is
// off it returns a nil provider, which the packages take as off at no cost,
// and a no-op shutdown. shutdown flushes the spans still buffered.
func NewTracerProvider(ctx context.Context, getenv func(string) string, version string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	on, err := Enabled(getenv)
	if err != nil || !on {
		return nil, noop, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, noop, fmt.Errorf("OTLP trace exporter (OTEL_EXPORTER_OTLP_*): %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName), semconv.ServiceVersion(version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, noop, fmt.Errorf("trace resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return sdk, sdk.Shutdown, nil
}

// LogErrors sends the OpenTelemetry SDK's own errors (an unreachable
// collector) to log instead of stderr. It sets process-wide state: only the
// commands call it.
func LogErrors(log *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("opentelemetry", "err", err)
	}))
}
