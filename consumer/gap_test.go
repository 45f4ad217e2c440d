package consumer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natstest"
	"memindex/store"
)

// gapWorker runs a one-partition worker on shard path until the returned
// stop is called (also at the end of the test).
func gapWorker(t *testing.T, js jetstream.JetStream, path string) (*consumer.Worker, *store.Shard, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sh, err := store.Open(ctx, path, store.Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	w, err := consumer.New(js, consumer.Config{Partitions: []int{0}, BatchSize: 50}, map[int]consumer.Shard{0: sh}, emb)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
			_ = sh.Close(context.Background())
		}
	}
	t.Cleanup(stop)
	return w, sh, stop
}

func publishN(t *testing.T, js jetstream.JetStream, from, to int64) {
	t.Helper()
	for i := from; i <= to; i++ {
		b := fmt.Appendf(nil, `{"type":"message","namespace":"ns","sessionKey":"k","sessionId":"s","seq":%d,"id":"m%d","text":"message %d","timestamp":"2026-11-30T09:00:00Z"}`, i, i, i)
		if _, err := js.Publish(context.Background(), memindex.EventSubject("ns"), b); err != nil {
			t.Fatal(err)
		}
	}
}

func gapSetup(t *testing.T) jetstream.JetStream {
	t.Helper()
	nc := natstest.Connect(t, natstest.Server(t))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.EnsureStreams(context.Background(), js, consumer.StreamConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	return js
}

func waitMessages(t *testing.T, sh *store.Shard, n int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d messages applied", n), func() bool {
		st, err := sh.Stats(context.Background())
		return err == nil && st.Messages == n
	})
}

// TestStreamGapAgedOutIsReported purges events a stopped worker had not
// applied (as limits aging them out would): at restart the partition's
// status error and readiness name the missing sequences, and the worker
// goes on with the events that remain.
func TestStreamGapAgedOutIsReported(t *testing.T) {
	js := gapSetup(t)
	path := filepath.Join(t.TempDir(), "p0.db")
	publishN(t, js, 1, 10)
	_, sh, stop := gapWorker(t, js, path)
	waitMessages(t, sh, 10)
	stop()

	publishN(t, js, 11, 20)
	s, err := js.Stream(context.Background(), memindex.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(context.Background(), jetstream.WithPurgeSequence(16)); err != nil { // removes 11-15
		t.Fatal(err)
	}
	w, sh, _ := gapWorker(t, js, path)
	waitMessages(t, sh, 15)
	want := "events 11-15 were removed"
	if st := w.Status(context.Background()); len(st) != 1 || !strings.Contains(st[0].Error, want) {
		t.Fatalf("Status() = %+v, want the partition's error to say %q", st, want)
	}
	if r := w.Readiness(context.Background()); len(r) != 1 || !strings.Contains(r[0].Gap, want) {
		t.Fatalf("Readiness() = %+v, want Gap to say %q", r, want)
	}
}

// TestStreamGapNoneInOrder checks that a worker that applied the stream in
// order reports no gap: the check must not cry wolf.
func TestStreamGapNoneInOrder(t *testing.T) {
	js := gapSetup(t)
	publishN(t, js, 1, 30)
	w, sh, _ := gapWorker(t, js, filepath.Join(t.TempDir(), "p0.db"))
	waitMessages(t, sh, 30)
	if st := w.Status(context.Background()); st[0].Error != "" {
		t.Fatalf("Status() error %q, want none", st[0].Error)
	}
	if r := w.Readiness(context.Background()); r[0].Gap != "" {
		t.Fatalf("Readiness().Gap = %q, want none", r[0].Gap)
	}
}

// TestStreamDeletedAndRecreatedIsReported deletes and recreates the event
// stream under a running worker: its consumer is re-positioned on the new
// stream, whose sequences end below the shard's, and the gap is reported
// instead of the new events being skipped in silence.
func TestStreamDeletedAndRecreatedIsReported(t *testing.T) {
	js := gapSetup(t)
	publishN(t, js, 1, 10)
	w, sh, _ := gapWorker(t, js, filepath.Join(t.TempDir(), "p0.db"))
	waitMessages(t, sh, 10)
	ctx := context.Background()
	if err := js.DeleteStream(ctx, memindex.StreamEvents); err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	publishN(t, js, 11, 13)
	want := "deleted and recreated"
	waitFor(t, "the gap in status", func() bool {
		st := w.Status(ctx)
		return len(st) == 1 && strings.Contains(st[0].Error, want)
	})
	if r := w.Readiness(ctx); !strings.Contains(r[0].Gap, want) {
		t.Fatalf("Readiness().Gap = %q, want it to say %q", r[0].Gap, want)
	}
}
