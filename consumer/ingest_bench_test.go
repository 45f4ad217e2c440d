package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"memindex"
	"memindex/chunker"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natstest"
	"memindex/store"
)

// BenchmarkIngest measures the worker's hot path end to end: b.N events
// already in the stream are fetched, decoded, planned, chunked, embedded
// (built-in embedder), applied and acknowledged. Publishing is not timed.
// Run it before and after a change to the worker to see its cost per event.
func BenchmarkIngest(b *testing.B) {
	benchmarkIngest(b, consumer.Config{}, 0)
}

// BenchmarkIngestHotNamespace is BenchmarkIngest with the events of one
// namespace interleaved over 1,000 sessions (issue 13 item 3): event i is
// the next message of session i%1000, as a busy tenant's live
// conversations arrive. Run it with -benchtime=100000x to see a partition
// that is behind by 100,000 events catch up.
func BenchmarkIngestHotNamespace(b *testing.B) {
	benchmarkIngest(b, consumer.Config{}, 1000)
}

// BenchmarkIngestHotNamespaceEvents10 is BenchmarkIngestHotNamespace with
// the messages sent in messages events of 10 consecutive messages of a
// session (as `memindex import` and `memindex publish` group them): b.N
// messages, b.N/10 events. Beside BenchmarkIngestHotNamespace it shows
// what the per-event work (delivery, decode, the gap check) costs a
// message.
func BenchmarkIngestHotNamespaceEvents10(b *testing.B) {
	benchmarkIngestEvents(b, consumer.Config{}, 1000, 10)
}

// BenchmarkIngestTraced is BenchmarkIngest with tracing on: every span is
// recorded and handed, in batches, to an exporter that drops it.
func BenchmarkIngestTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	benchmarkIngest(b, consumer.Config{TracerProvider: tp}, 0)
}

// benchmarkIngest runs the ingest benchmark with the worker settings of cfg
// (Partitions, BatchSize and Chunker are set here). With interleave 0 the
// events come session after session, 50 messages each; otherwise over
// interleave sessions, one message of each in turn.
func benchmarkIngest(b *testing.B, cfg consumer.Config, interleave int) {
	benchmarkIngestEvents(b, cfg, interleave, 1)
}

// benchmarkIngestEvents is benchmarkIngest with the messages in events of
// per (with interleave: message i is then of session (i/per)%interleave).
func benchmarkIngestEvents(b *testing.B, cfg consumer.Config, interleave, per int) {
	const partitions = 1
	s := natstest.Server(b)
	nc := natstest.Connect(b, s)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: partitions}); err != nil {
		b.Fatal(err)
	}
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		b.Fatal(err)
	}
	const ns = "bench"
	events := 0
	var group memindex.Event
	for i := range b.N {
		sess, seq := fmt.Sprintf("s%d", i/50), int64(i%50)+1
		if interleave > 0 {
			g := i / per
			sess, seq = fmt.Sprintf("s%d", g%interleave), int64(g/interleave*per+i%per)+1
		}
		e := message(ns, "chat", sess, seq, fmt.Sprintf("message %d of the benchmark mentions topic%d and the weather in Berlin", i, i%97))
		if per > 1 {
			if len(group.Messages) == 0 {
				group = memindex.Event{Type: memindex.TypeMessages, Namespace: ns, SessionKey: e.SessionKey, SessionID: e.SessionID}
			}
			group.Messages = append(group.Messages, memindex.Message{Seq: e.Seq, ID: e.ID, Speaker: e.Speaker, Text: e.Text, Timestamp: e.Timestamp})
			if len(group.Messages) < per && i < b.N-1 {
				continue
			}
			e, group.Messages = group, nil
		}
		data, err := json.Marshal(e)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.PublishAsync(memindex.EventSubject(ns), data); err != nil {
			b.Fatal(err)
		}
		events++
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("publishing did not complete within a minute")
	}
	sh, err := store.Open(ctx, filepath.Join(b.TempDir(), "p0.db"), store.Config{Dims: testDims})
	if err != nil {
		b.Fatal(err)
	}
	defer sh.Close(context.Background())
	cfg.Partitions = []int{0}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 500
	}
	cfg.Chunker = chunker.Config{BudgetTokens: 120}
	w, err := consumer.New(js, cfg, map[int]consumer.Shard{0: sh}, emb)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(rctx) }()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		applied, _ := w.Applied(0)
		if applied >= uint64(events) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("applied %d of %d events within 5 minutes", applied, events)
		}
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	cancel()
	<-done
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
