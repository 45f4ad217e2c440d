package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"memindex"
	"memindex/chunker"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natstest"
	"memindex/store"
)

// startWorker runs a worker owning every partition with cfg (Partitions and
// Chunker are set here) on real shards, until the test ends.
func startWorker(t *testing.T, js jetstream.JetStream, cfg consumer.Config) *consumer.Worker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seams := make(map[int]consumer.Shard)
	for p := range testPartitions {
		sh, err := store.Open(ctx, filepath.Join(dir, fmt.Sprintf("p%d.db", p)), store.Config{Dims: testDims})
		if err != nil {
			t.Fatalf("store.Open: %v", err)
		}
		t.Cleanup(func() { _ = sh.Close(context.Background()) })
		seams[p] = sh
		cfg.Partitions = append(cfg.Partitions, p)
	}
	cfg.Chunker = chunker.Config{BudgetTokens: 120}
	w, err := consumer.New(js, cfg, seams, emb)
	if err != nil {
		t.Fatalf("consumer.New: %v", err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// newJetStream starts a server with the memindex streams.
func newJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	nc := natstest.Connect(t, natstest.Server(t))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.EnsureStreams(context.Background(), js, consumer.StreamConfig{Partitions: testPartitions}); err != nil {
		t.Fatal(err)
	}
	return js
}

// ctxLog is a slog handler that keeps each record's message, attributes and
// the trace id of the span in its context.
type ctxLog struct {
	mu   sync.Mutex
	recs []logRec
}

type logRec struct {
	msg   string
	trace trace.TraceID
	attrs map[string]string
}

func (l *ctxLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *ctxLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *ctxLog) WithGroup(string) slog.Handler            { return l }
func (l *ctxLog) Handle(ctx context.Context, r slog.Record) error {
	rec := logRec{msg: r.Message, trace: trace.SpanContextFromContext(ctx).TraceID(), attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool { rec.attrs[a.Key] = a.Value.String(); return true })
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, rec)
	return nil
}

func (l *ctxLog) find(msg string) (logRec, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.msg == msg {
			return r, true
		}
	}
	return logRec{}, false
}

func attrOf(s tracetest.SpanStub, key attribute.Key) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.String()
		}
	}
	return ""
}

func linksTo(s tracetest.SpanStub, sc trace.SpanContext) bool {
	return slices.ContainsFunc(s.Links, func(l sdktrace.Link) bool { return l.SpanContext.SpanID() == sc.SpanID() })
}

// TestWorkerSpansContinueThePublishersTrace publishes events whose
// traceparent header is spelled in several cases and finds, in an in-memory
// exporter, the worker's process span of each as a child of the publisher's
// span in its trace, with the messaging attributes, and the batch's chunk,
// embed and commit spans linked to it.
func TestWorkerSpansContinueThePublishersTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	js := newJetStream(t)
	logs := &ctxLog{}
	startWorker(t, js, consumer.Config{BatchSize: 50, TracerProvider: tp, Logger: slog.New(logs)})

	const ns = "traced"
	publisher := tp.Tracer("test publisher")
	type sent struct {
		key    string // header key spelling
		parent trace.SpanContext
		seq    uint64
		bad    bool
	}
	var all []sent
	for i, key := range []string{"traceparent", "Traceparent", "TRACEPARENT", "traceParent", "traceparent"} {
		_, span := publisher.Start(context.Background(), "send", trace.WithSpanKind(trace.SpanKindProducer))
		sc := span.SpanContext()
		span.End()
		payload, _ := json.Marshal(message(ns, "chat", "s1", int64(i+1), fmt.Sprintf("traced message %d about the harbour", i)))
		bad := i == 4
		if bad {
			payload = []byte(`{"type":"message",`)
		}
		m := nats.NewMsg(memindex.EventSubject(ns))
		m.Data = payload
		m.Header.Set(key, fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID())) // case-sensitive: kept as spelled
		ack, err := js.PublishMsg(context.Background(), m)
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
		all = append(all, sent{key: key, parent: sc, seq: ack.Sequence, bad: bad})
	}
	// One event with no trace context at all.
	plain, _ := json.Marshal(message(ns, "chat", "s1", 9, "an untraced message"))
	if _, err := js.Publish(context.Background(), memindex.EventSubject(ns), plain); err != nil {
		t.Fatal(err)
	}

	find := func(pred func(tracetest.SpanStub) bool) (tracetest.SpanStub, bool) {
		for _, s := range exp.GetSpans() {
			if pred(s) {
				return s, true
			}
		}
		return tracetest.SpanStub{}, false
	}
	processOf := func(seq uint64) (tracetest.SpanStub, bool) {
		return find(func(s tracetest.SpanStub) bool {
			return s.Name == consumer.SpanProcess && attrOf(s, "messaging.message.id") == strconv.FormatUint(seq, 10)
		})
	}
	waitFor(t, "a process span for every event", func() bool {
		for _, e := range all {
			if _, ok := processOf(e.seq); !ok {
				return false
			}
		}
		_, ok := processOf(uint64(len(all) + 1))
		return ok
	})

	for _, e := range all {
		s, _ := processOf(e.seq)
		if s.Parent.SpanID() != e.parent.SpanID() || s.SpanContext.TraceID() != e.parent.TraceID() {
			t.Errorf("header %q: process span parent %s in trace %s, want the publisher's span %s in trace %s",
				e.key, s.Parent.SpanID(), s.SpanContext.TraceID(), e.parent.SpanID(), e.parent.TraceID())
		}
		if s.SpanKind != trace.SpanKindConsumer {
			t.Errorf("header %q: span kind %v, want consumer", e.key, s.SpanKind)
		}
		wantSubject := memindex.StoredEventSubject(memindex.Partition(ns, testPartitions), ns)
		for key, want := range map[attribute.Key]string{
			"messaging.system": "nats", "messaging.operation.type": "process",
			"messaging.destination.name": wantSubject, "messaging.message.id": strconv.FormatUint(e.seq, 10),
			"messaging.destination.partition.id": strconv.Itoa(memindex.Partition(ns, testPartitions)),
		} {
			if got := attrOf(s, key); got != want {
				t.Errorf("header %q: %s = %q, want %q", e.key, key, got, want)
			}
		}
		wantOutcome := map[bool]string{false: consumer.OutcomeIndexed, true: consumer.OutcomeDLQ}[e.bad]
		if got := attrOf(s, "memindex.outcome"); got != wantOutcome {
			t.Errorf("header %q: outcome %q, want %q", e.key, got, wantOutcome)
		}
		if e.bad != (s.Status.Code == codes.Error) {
			t.Errorf("header %q: status %v, want error only for the dead letter", e.key, s.Status)
		}
		// The batch span links to the message span and the message span to it.
		if len(s.Links) != 1 {
			t.Fatalf("header %q: process span has %d links, want 1 (its batch)", e.key, len(s.Links))
		}
		batchSC := s.Links[0].SpanContext
		batch, ok := find(func(b tracetest.SpanStub) bool { return b.SpanContext.SpanID() == batchSC.SpanID() })
		if !ok || batch.Name != consumer.SpanBatch || !linksTo(batch, s.SpanContext) {
			t.Errorf("header %q: linked span %q (found %v) does not link back to the message span", e.key, batch.Name, ok)
			continue
		}
		if e.bad {
			continue
		}
		for _, name := range []string{consumer.SpanChunk, consumer.SpanEmbed, consumer.SpanCommit} {
			child, ok := find(func(c tracetest.SpanStub) bool {
				return c.Name == name && c.Parent.SpanID() == batchSC.SpanID()
			})
			if !ok {
				t.Errorf("header %q: no %s span below the batch span", e.key, name)
				continue
			}
			if name == consumer.SpanEmbed && !linksTo(child, s.SpanContext) {
				t.Errorf("header %q: the embed span does not link to the message's span", e.key)
			}
		}
	}
	// The dead letter's log record is in the publisher's trace and names
	// the partition, stream sequence and namespace with the stable keys.
	bad := all[len(all)-1]
	rec, ok := logs.find("dead-lettered event")
	switch {
	case !ok:
		t.Error("no dead-lettered event logged")
	case rec.trace != bad.parent.TraceID():
		t.Errorf("dead letter logged in trace %s, want the publisher's %s", rec.trace, bad.parent.TraceID())
	case rec.attrs["stream_seq"] != strconv.FormatUint(bad.seq, 10) || rec.attrs["namespace"] != ns || rec.attrs["partition"] == "":
		t.Errorf("dead letter logged with %v, want stream_seq %d, namespace %s and a partition", rec.attrs, bad.seq, ns)
	}
	// The untraced event's span is a child of its batch span.
	s, _ := processOf(uint64(len(all) + 1))
	batch, ok := find(func(b tracetest.SpanStub) bool { return b.SpanContext.SpanID() == s.Parent.SpanID() })
	if !ok || batch.Name != consumer.SpanBatch {
		t.Errorf("untraced event: parent span %q (found %v), want its %q span", batch.Name, ok, consumer.SpanBatch)
	}
}

// TestWorkerMetricsCountOutcomes checks the counts a worker reports: every
// event once, by outcome, and a batch duration.
func TestWorkerMetricsCountOutcomes(t *testing.T) {
	js := newJetStream(t)
	type total struct{ indexed, dlq, dup, batches int }
	got := make(chan consumer.BatchStats, 100)
	startWorker(t, js, consumer.Config{BatchSize: 50, Metrics: consumer.MetricsFuncs{
		BatchDoneFunc: func(_ int, s consumer.BatchStats) { got <- s },
	}})
	const ns = "counted"
	for i := range 7 {
		payload, _ := json.Marshal(message(ns, "chat", "s1", int64(i+1), fmt.Sprintf("counted message %d", i)))
		if i == 3 {
			payload = []byte("not json")
		}
		if _, err := js.Publish(context.Background(), memindex.EventSubject(ns), payload); err != nil {
			t.Fatal(err)
		}
	}
	var sum total
	deadline := time.After(20 * time.Second)
	for sum.indexed+sum.dlq < 7 {
		select {
		case s := <-got:
			if s.Duration <= 0 {
				t.Errorf("batch duration %v, want > 0", s.Duration)
			}
			sum.indexed, sum.dlq, sum.dup, sum.batches = sum.indexed+s.Indexed, sum.dlq+s.DLQ, sum.dup+s.Duplicate, sum.batches+1
		case <-deadline:
			t.Fatalf("after 20s the worker reported %+v, want 6 indexed and 1 dlq", sum)
		}
	}
	if sum.indexed != 6 || sum.dlq != 1 || sum.dup != 0 {
		t.Fatalf("worker reported %+v, want 6 indexed, 1 dlq, 0 duplicates", sum)
	}
}
