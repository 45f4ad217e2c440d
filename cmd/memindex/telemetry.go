package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"memindex"
)

// Log attribute keys added to records logged with a span in their context.
const (
	logKeyTraceID = "trace_id"
	logKeySpanID  = "span_id"
)

// defaultServiceName is the service.name of memindex's traces unless
// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const defaultServiceName = "memindex"

// tracingEnabled reports whether the standard OpenTelemetry variables ask
// for traces: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) with
// no exporter named. OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none
// turn tracing off. Unlike the SDK default, no variable means off: memindex
// sends nothing anywhere unless told to.
func tracingEnabled(getenv func(string) string) (bool, error) {
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

// newTracing builds the tracer provider the standard OTEL_* variables ask
// for (see tracingEnabled): an OTLP/HTTP exporter configured by the
// OTEL_EXPORTER_OTLP_* variables, batched (OTEL_BSP_*), sampled as
// OTEL_TRACES_SAMPLER says, with service.name from OTEL_SERVICE_NAME (default
// "memindex") and OTEL_RESOURCE_ATTRIBUTES. When tracing is off it returns a
// nil provider, which the packages take as off at no cost, and a no-op
// shutdown. shutdown flushes the spans still buffered.
func newTracing(ctx context.Context, getenv func(string) string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	on, err := tracingEnabled(getenv)
	if err != nil || !on {
		return nil, noop, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, noop, fmt.Errorf("OTLP trace exporter (OTEL_EXPORTER_OTLP_*): %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(defaultServiceName), semconv.ServiceVersion(version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, noop, fmt.Errorf("trace resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return sdk, sdk.Shutdown, nil
}

// logOTelErrors sends the OpenTelemetry SDK's own errors (an unreachable
// collector) to log instead of stderr. It sets process-wide state: only the
// commands call it.
func logOTelErrors(log *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("opentelemetry", "err", err)
	}))
}

// traceHandler adds the trace and span ids of the span in a record's context
// to the record: logs and traces of one event or search join on trace_id.
type traceHandler struct{ slog.Handler }

// withTraceIDs wraps h so that records logged with a span in their context
// carry trace_id and span_id.
func withTraceIDs(h slog.Handler) slog.Handler { return traceHandler{h} }

// Handle adds the ids, when there is a span, and passes r on.
func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String(logKeyTraceID, sc.TraceID().String()), slog.String(logKeySpanID, sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the wrapper on the derived handler.
func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(as)}
}

// WithGroup keeps the wrapper on the derived handler.
func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}

// envCarrier reads trace context from the TRACEPARENT and TRACESTATE
// environment variables, so a script can make `memindex publish` continue
// its trace.
type envCarrier func(string) string

func (c envCarrier) Get(key string) string { return c(strings.ToUpper(key)) }
func (c envCarrier) Set(string, string)    {}
func (c envCarrier) Keys() []string        { return []string{"traceparent", "tracestate"} }

// publishTrace is the trace context `memindex publish` injects into each
// event's headers.
type publishTrace struct {
	ctx  context.Context
	span trace.Span
	on   bool // a valid context to inject
	stop func(context.Context) error
}

// startPublishTrace starts the send span of a publish run when tracing is
// on (a child of TRACEPARENT when set); with tracing off it passes on
// TRACEPARENT as it is, and otherwise injects nothing.
func startPublishTrace(ctx context.Context, getenv func(string) string) (*publishTrace, error) {
	tp, shutdown, err := newTracing(ctx, getenv)
	if err != nil {
		return nil, err
	}
	ctx = propagation.TraceContext{}.Extract(ctx, envCarrier(getenv))
	pt := &publishTrace{ctx: ctx, span: trace.SpanFromContext(ctx), stop: shutdown}
	if tp != nil {
		pt.ctx, pt.span = tp.Tracer("memindex/publish").Start(ctx, "send "+memindex.EventSubjectPrefix,
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(semconv.MessagingSystemKey.String("nats"), semconv.MessagingOperationTypeSend,
				semconv.MessagingOperationName("send"), semconv.MessagingDestinationTemplate(memindex.EventSubjectPrefix+".{namespace}")))
	}
	pt.on = trace.SpanContextFromContext(pt.ctx).IsValid()
	return pt, nil
}

// inject writes the trace context into m's headers (lowercase traceparent).
func (pt *publishTrace) inject(m *nats.Msg) {
	if !pt.on {
		return
	}
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	propagation.TraceContext{}.Inject(pt.ctx, memindex.HeaderCarrier(m.Header))
}

// end ends the send span with the run's counts and flushes it, within 5s.
func (pt *publishTrace) end(ctx context.Context, published, failed int64) error {
	pt.span.SetAttributes(semconv.MessagingBatchMessageCount(int(published)))
	if failed > 0 {
		pt.span.SetStatus(codes.Error, fmt.Sprintf("%d publishes failed", failed))
	}
	pt.span.End()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return pt.stop(ctx)
}
