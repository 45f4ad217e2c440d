package query

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"memindex"
)

// SpanSearch is the span of one search, from its receipt to the reply: a
// child of the requester's span when the request carries a traceparent
// header (any case), with the time of each leg as attributes.
const SpanSearch = "search"

// Attribute keys of the search span.
const (
	attrNamespace       = attribute.Key("memindex.namespace")
	attrPartition       = attribute.Key("memindex.partition")
	attrHits            = attribute.Key("memindex.search.hits")
	attrDegraded        = attribute.Key("memindex.search.degraded")
	attrVectorMs        = attribute.Key("memindex.search.vector.took_ms")
	attrVectorAnswered  = attribute.Key("memindex.search.vector.answered")
	attrKeywordMs       = attribute.Key("memindex.search.keyword.took_ms")
	attrKeywordAnswered = attribute.Key("memindex.search.keyword.answered")
	attrErrorCode       = attribute.Key("memindex.error.code")
)

// tracing creates the spans of the service; its zero value is off and costs
// a search nothing.
type tracing struct {
	tracer trace.Tracer // nil when off
	prop   propagation.TextMapPropagator
}

func newTracing(tp trace.TracerProvider) tracing {
	if tp == nil {
		return tracing{}
	}
	return tracing{tracer: tp.Tracer("memindex/query"), prop: propagation.TraceContext{}}
}

// start starts the search span of r received at t; a no-op span when off.
func (t tracing) start(r micro.Request, at time.Time) trace.Span {
	if t.tracer == nil {
		return noopSpan
	}
	parent := t.prop.Extract(context.Background(), memindex.HeaderCarrier(r.Headers()))
	_, span := t.tracer.Start(parent, SpanSearch, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(at),
		trace.WithAttributes(semconv.MessagingSystemKey.String("nats"), semconv.MessagingDestinationName(r.Subject())))
	return span
}

// context returns ctx carrying span when tracing is on.
func (t tracing) context(ctx context.Context, span trace.Span) context.Context {
	if t.tracer == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, span)
}

// endSearch ends the span of a search that answered resp or failed with
// code.
func (t tracing) endSearch(span trace.Span, resp *memindex.SearchResponse, err error, code string) {
	if t.tracer == nil {
		return
	}
	if resp != nil {
		span.SetAttributes(attrNamespace.String(resp.Namespace), attrPartition.Int(resp.Partition),
			attrHits.Int(len(resp.Hits)), attrDegraded.StringSlice(resp.Degraded),
			attrVectorMs.Float64(resp.Legs.Vector.TookMs), attrVectorAnswered.Bool(resp.Legs.Vector.Answered),
			attrKeywordMs.Float64(resp.Legs.Keyword.TookMs), attrKeywordAnswered.Bool(resp.Legs.Keyword.Answered))
	}
	if err != nil {
		span.RecordError(err)
		span.SetAttributes(attrErrorCode.String(code))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// noopSpan is what spans are when tracing is off.
var noopSpan = trace.SpanFromContext(context.Background())
