// Package telemetry sets up the process-wide parts of memindex's
// observability for the binary: the OpenTelemetry SDK's tracer provider with
// its OTLP/HTTP exporter, configured only by the standard OTEL_* variables
// and off unless they ask for traces (NewTracerProvider, Enabled); the SDK's
// own errors sent to a logger (LogErrors); the slog handler that adds
// trace_id and span_id to records logged under a span (WithTraceIDs); and
// the send span of `memindex publish`, a child of TRACEPARENT, whose context
// goes into each event's headers as lowercase traceparent (StartPublish).
//
// Only cmd/memindex uses it: the other packages take a TracerProvider as a
// parameter and use only the OpenTelemetry API. It must not read flags,
// print, or send anything anywhere unless the OTEL_* variables say so.
package telemetry
