package consumer

import (
	"context"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"memindex"
)

// Span names of ingestion, after the OpenTelemetry messaging conventions.
// Each batch gets an ingest span with chunk, embed and commit spans below
// it. Each message gets a process span: a child of the publisher's span when
// its headers carry a traceparent (linked both ways with the batch span),
// otherwise a child of the batch span. The embed span links to the spans of
// every message of the batch.
const (
	SpanProcess = "process " + memindex.StreamEvents
	SpanBatch   = "ingest batch"
	SpanChunk   = "chunk"
	SpanEmbed   = "embed"
	SpanCommit  = "commit"
)

// Attribute keys of memindex's own span attributes.
const (
	attrKeyOutcome = attribute.Key("memindex.outcome")
	attrKeyChunks  = attribute.Key("memindex.chunks")
	attrKeyTexts   = attribute.Key("memindex.texts")
)

// instrumentationName names the tracer of ingestion.
const instrumentationName = "memindex/consumer"

var messagingNATS = semconv.MessagingSystemKey.String("nats")

// tracing creates the spans of a worker. Its zero value is off: no header is
// read and nothing is allocated on the ingest path.
type tracing struct {
	tracer trace.Tracer // nil when off
	prop   propagation.TextMapPropagator
}

// newTracing returns tracing with tp's tracer, or off when tp is nil.
func newTracing(tp trace.TracerProvider) tracing {
	if tp == nil {
		return tracing{}
	}
	return tracing{tracer: tp.Tracer(instrumentationName), prop: propagation.TraceContext{}}
}

// begin starts the span of a batch of n messages of partition p; nil when
// tracing is off.
func (t tracing) begin(ctx context.Context, p int, group string, n int) *batchTrace {
	if t.tracer == nil {
		return nil
	}
	pid := strconv.Itoa(p)
	ctx, span := t.tracer.Start(ctx, SpanBatch, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(messagingNATS, semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process"),
			semconv.MessagingBatchMessageCount(n), semconv.MessagingConsumerGroupName(group),
			semconv.MessagingDestinationPartitionID(pid)))
	return &batchTrace{t: t, ctx: ctx, span: span, pid: pid, group: group, msgs: make([]trace.Span, 0, n)}
}

// batchTrace holds the spans of one batch. Its methods do nothing on a nil
// receiver, which is what begin returns when tracing is off.
type batchTrace struct {
	t     tracing
	ctx   context.Context // carries the batch span
	span  trace.Span
	pid   string
	group string
	msgs  []trace.Span
}

// context returns the batch span's context for logs and calls, or ctx when
// tracing is off.
func (b *batchTrace) context(ctx context.Context) context.Context {
	if b == nil {
		return ctx
	}
	return b.ctx
}

// within returns ctx carrying the batch span, or ctx itself when tracing
// is off: the commit stage runs a batch under its own context (its
// cancellation, the shutdown grace) with the span the fetch stage began.
func (b *batchTrace) within(ctx context.Context) context.Context {
	if b == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, b.span)
}

// withSpanOf returns ctx carrying the span that from carries (a message's,
// from message), or ctx itself when tracing is off.
func (b *batchTrace) withSpanOf(ctx, from context.Context) context.Context {
	if b == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, trace.SpanFromContext(from))
}

// message starts the process span of m and records its outcome; reason
// says why a dead letter can never apply. The span is a child of the
// publisher's span when m's headers carry a traceparent (whatever the case
// of the key), linked to the batch span; otherwise a child of the batch
// span. It returns ctx (the batch's) carrying the message's span, or ctx
// itself when tracing is off.
func (b *batchTrace) message(ctx context.Context, m jetstream.Msg, seq uint64, outcome, reason string) context.Context {
	if b == nil {
		return ctx
	}
	parent := b.t.prop.Extract(b.ctx, memindex.HeaderCarrier(m.Headers()))
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(messagingNATS, semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process"),
			semconv.MessagingDestinationName(m.Subject()), semconv.MessagingMessageID(strconv.FormatUint(seq, 10)),
			semconv.MessagingConsumerGroupName(b.group), semconv.MessagingDestinationPartitionID(b.pid),
			semconv.MessagingMessageBodySize(len(m.Data())), attrKeyOutcome.String(outcome))}
	remote := trace.SpanContextFromContext(parent).IsRemote()
	if remote {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: b.span.SpanContext()}))
	}
	_, span := b.t.tracer.Start(parent, SpanProcess, opts...)
	ctx = trace.ContextWithSpan(ctx, span)
	if outcome == OutcomeDLQ {
		span.SetStatus(codes.Error, "dead-lettered: "+truncateReason(reason))
	}
	if remote {
		b.span.AddLink(trace.Link{SpanContext: span.SpanContext()})
	}
	b.msgs = append(b.msgs, span)
	return ctx
}

// start starts a span below the batch span; a no-op span when tracing is off.
func (b *batchTrace) start(name string, opts ...trace.SpanStartOption) trace.Span {
	if b == nil {
		return noopSpan
	}
	_, span := b.t.tracer.Start(b.ctx, name, opts...)
	return span
}

// startEmbed starts the embed span of texts, linked to each message's span.
func (b *batchTrace) startEmbed(texts int) trace.Span {
	if b == nil {
		return noopSpan
	}
	links := make([]trace.Link, len(b.msgs))
	for i, s := range b.msgs {
		links[i] = trace.Link{SpanContext: s.SpanContext()}
	}
	return b.start(SpanEmbed, trace.WithLinks(links...), trace.WithAttributes(attrKeyTexts.Int(texts)))
}

// end ends the message spans and the batch span; err is the batch's fate.
func (b *batchTrace) end(err error) {
	if b == nil {
		return
	}
	for _, s := range b.msgs {
		if err != nil {
			s.RecordError(err)
			s.SetStatus(codes.Error, err.Error())
		}
		s.End()
	}
	endSpan(b.span, err)
}

// endSpan ends span, recording err when there is one.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// noopSpan is what spans are when tracing is off.
var noopSpan = trace.SpanFromContext(context.Background())
