package telemetry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"memindex"
)

// EnvCarrier reads trace context from the TRACEPARENT and TRACESTATE
// environment variables (through the getenv it is), so a script can make
// `memindex publish` continue its trace. Set does nothing.
type EnvCarrier func(string) string

// Get returns the variable named key in capitals.
func (c EnvCarrier) Get(key string) string { return c(strings.ToUpper(key)) }

// Set does nothing: the environment is not written.
func (c EnvCarrier) Set(string, string) {}

// Keys names the keys Get reads.
func (c EnvCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// Publish is the trace context `memindex publish` injects into each event's
// headers.
type Publish struct {
	ctx  context.Context
	span trace.Span
	on   bool // a valid context to inject
	stop func(context.Context) error
}

// StartPublish starts the send span of a publish run when tracing is on
// (NewTracerProvider; a child of TRACEPARENT when set); with tracing off it
// passes on TRACEPARENT as it is, and otherwise injects nothing.
func StartPublish(ctx context.Context, getenv func(string) string, version string) (*Publish, error) {
	tp, shutdown, err := NewTracerProvider(ctx, getenv, version)
	if err != nil {
		return nil, err
	}
	ctx = propagation.TraceContext{}.Extract(ctx, EnvCarrier(getenv))
	pt := &Publish{ctx: ctx, span: trace.SpanFromContext(ctx), stop: shutdown}
	if tp != nil {
		pt.ctx, pt.span = tp.Tracer("memindex/publish").Start(ctx, "send "+memindex.EventSubjectPrefix,
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(semconv.MessagingSystemKey.String("nats"), semconv.MessagingOperationTypeSend,
				semconv.MessagingOperationName("send"), semconv.MessagingDestinationTemplate(memindex.EventSubjectPrefix+".{namespace}")))
	}
	pt.on = trace.SpanContextFromContext(pt.ctx).IsValid()
	return pt, nil
}

// Inject writes the trace context into m's headers (lowercase traceparent).
func (pt *Publish) Inject(m *nats.Msg) {
	if !pt.on {
		return
	}
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	propagation.TraceContext{}.Inject(pt.ctx, memindex.HeaderCarrier(m.Header))
}

// End ends the send span with the run's counts and flushes it, within 5s.
func (pt *Publish) End(ctx context.Context, published, failed int64) error {
	pt.span.SetAttributes(semconv.MessagingBatchMessageCount(int(published)))
	if failed > 0 {
		pt.span.SetStatus(codes.Error, fmt.Sprintf("%d publishes failed", failed))
	}
	pt.span.End()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return pt.stop(ctx)
}
