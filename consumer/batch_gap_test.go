package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/chunker"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natstest"
	"memindex/store"
)

// sizesShard is a real shard that notes the messages of every batch it
// commits.
type sizesShard struct {
	*store.Shard
	mu    sync.Mutex
	sizes []int
}

func (s *sizesShard) Apply(ctx context.Context, b store.Batch) (store.ApplyStats, error) {
	st, err := s.Shard.Apply(ctx, b)
	if err == nil {
		s.mu.Lock()
		s.sizes = append(s.sizes, len(b.Messages))
		s.mu.Unlock()
	}
	return st, err
}

// TestABatchBehindIsNotCutByAPause: a partition that starts behind (every
// event already in the stream) commits full batches, although its worker
// ends a batch after a pause of a nanosecond: while the stream holds more
// events for the consumer, a pause is the pull buffer waiting for its
// refill, and the batch waits for it (nextWait). Every batch but the last
// holds at least BatchSize events; with the nanosecond as the only wait,
// batches end whenever the 20-event pull buffer runs dry.
func TestABatchBehindIsNotCutByAPause(t *testing.T) {
	const events, batch = 200, 10
	s := natstest.Server(t)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range events {
		b, err := json.Marshal(message("ns", fmt.Sprintf("chat-%d", i%7), "s1", int64(i/7)+1, fmt.Sprintf("message %d about the harbour", i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, memindex.EventSubject("ns"), b); err != nil {
			t.Fatal(err)
		}
	}
	inner, err := store.Open(ctx, filepath.Join(t.TempDir(), "p0.db"), store.Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close(context.Background())
	sh := &sizesShard{Shard: inner}
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	w, err := consumer.New(js, consumer.Config{Partitions: []int{0}, BatchSize: batch, MaxBatch: 2 * batch, BatchWait: time.Nanosecond,
		Chunker: chunker.Config{BudgetTokens: 120}}, map[int]consumer.Shard{0: sh}, emb)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "every event applied", func() bool {
		seq, err := inner.AppliedSeq(ctx)
		return err == nil && seq == events
	})
	sh.mu.Lock()
	sizes := append([]int(nil), sh.sizes...)
	sh.mu.Unlock()
	total := 0
	for i, n := range sizes {
		total += n
		if n < batch && i < len(sizes)-1 {
			t.Fatalf("batch %d of %d held %d events, under the batch size %d: cut by a pause while the stream held more (sizes %v)", i+1, len(sizes), n, batch, sizes)
		}
	}
	if total != events {
		t.Fatalf("batches held %d events (sizes %v), want %d", total, sizes, events)
	}
}
