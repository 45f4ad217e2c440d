package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Log attribute keys added to records logged with a span in their context.
const (
	LogKeyTraceID = "trace_id"
	LogKeySpanID  = "span_id"
)

// traceHandler adds the trace and span ids of the span in a record's context
// to the record: logs and traces of one event or search join on trace_id.
type traceHandler struct{ slog.Handler }

// WithTraceIDs wraps h so that records logged with a span in their context
// carry trace_id and span_id.
func WithTraceIDs(h slog.Handler) slog.Handler { return traceHandler{h} }

// Handle adds the ids, when there is a span, and passes r on.
func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String(LogKeyTraceID, sc.TraceID().String()), slog.String(LogKeySpanID, sc.SpanID().String()))
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
