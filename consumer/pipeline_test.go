package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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

// gatedShard is a real shard whose Apply the test holds and fails at will:
// gate, while set, is where the next Apply waits for the test's verdict (nil
// applies, an error fails).
type gatedShard struct {
	*store.Shard
	mu      sync.Mutex
	gate    chan error
	entered chan uint64 // the Seq of each Apply that waits at the gate
	seqs    []uint64    // the Seq of every Apply that committed
	sizes   []int       // the messages of every Apply that committed
	// after, when set, holds an Apply once its transaction committed
	// (in Batch.Committed, after the worker's own), as slow in-memory
	// indexes would; afterEntered gets the Seq of each Apply held there.
	after        chan error
	afterEntered chan uint64
}

func (g *gatedShard) Apply(ctx context.Context, b store.Batch) (store.ApplyStats, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.entered <- b.Seq
		if err := <-gate; err != nil {
			return store.ApplyStats{}, err
		}
	}
	g.mu.Lock()
	after := g.after
	g.mu.Unlock()
	if after != nil {
		committed := b.Committed
		b.Committed = func() {
			if committed != nil {
				committed()
			}
			g.afterEntered <- b.Seq
			<-after
		}
	}
	st, err := g.Shard.Apply(ctx, b)
	if err == nil {
		g.mu.Lock()
		g.seqs = append(g.seqs, b.Seq)
		g.sizes = append(g.sizes, len(b.Messages))
		g.mu.Unlock()
	}
	return st, err
}

func (g *gatedShard) setGate(c chan error) {
	g.mu.Lock()
	g.gate = c
	g.mu.Unlock()
}

// setAfter holds the Applies that start from now on once their
// transaction commits, until c gives them a value (nil: none held).
func (g *gatedShard) setAfter(c chan error) {
	g.mu.Lock()
	g.after = c
	if g.afterEntered == nil {
		g.afterEntered = make(chan uint64, 16)
	}
	g.mu.Unlock()
}

func (g *gatedShard) committed() []uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.seqs)
}

// batchSizes returns the messages of every batch committed, in order.
func (g *gatedShard) batchSizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.sizes)
}

// textsEmbedder records every text it embeds.
type textsEmbedder struct {
	embedder.Embedder
	mu    sync.Mutex
	texts []string
}

func (e *textsEmbedder) Embed(ctx context.Context, req embedder.Request) ([][]float32, error) {
	e.mu.Lock()
	e.texts = append(e.texts, req.Texts...)
	e.mu.Unlock()
	return e.Embedder.Embed(ctx, req)
}

func (e *textsEmbedder) saw(word string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.texts {
		if strings.Contains(t, word) {
			return true
		}
	}
	return false
}

// pipelineRig is a one-partition worker of batches of 10 over a gated
// shard; it waits up to a second for the next event of a batch, so a batch
// is the 10 events published together.
type pipelineRig struct {
	js  jetstream.JetStream
	sh  *gatedShard
	emb *textsEmbedder
}

func newPipelineRig(t *testing.T) *pipelineRig {
	t.Helper()
	return newPipelineRigWith(t, consumer.Config{BatchSize: 10, MaxBatch: 10, BatchWait: time.Second}, nil)
}

// newPipelineRigWith is newPipelineRig with the worker's batch settings
// taken from cfg (BatchSize, MaxBatch, BatchWait, MaxBatchBytes,
// PullBufferBytes, Limits, InflightBytes) and, when before is not
// nil, before run once the stream exists and before the worker starts.
func newPipelineRigWith(t *testing.T, cfg consumer.Config, before func(jetstream.JetStream)) *pipelineRig {
	t.Helper()
	s := natstest.Server(t)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(js)
	}
	inner, err := store.Open(ctx, filepath.Join(t.TempDir(), "p0.db"), store.Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	b, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	r := &pipelineRig{js: js, sh: &gatedShard{Shard: inner, entered: make(chan uint64, 16)}, emb: &textsEmbedder{Embedder: b}}
	w, err := consumer.New(js, consumer.Config{Partitions: []int{0}, BatchSize: cfg.BatchSize, MaxBatch: cfg.MaxBatch, BatchWait: cfg.BatchWait,
		MaxBatchBytes: cfg.MaxBatchBytes, PullBufferBytes: cfg.PullBufferBytes, Limits: cfg.Limits, InflightBytes: cfg.InflightBytes,
		Chunker: chunker.Config{BudgetTokens: 120}}, map[int]consumer.Shard{0: r.sh}, r.emb)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() {
		r.sh.setGate(nil)
		cancel()
		<-done
		inner.Close(context.Background())
	})
	return r
}

// publish sends messages from..to of one session, each naming word.
func (r *pipelineRig) publish(t *testing.T, from, to int64, word string) {
	t.Helper()
	for i := from; i <= to; i++ {
		b, err := json.Marshal(message("ns", "chat", "s1", i, fmt.Sprintf("message %d of the %s part", i, word)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.js.Publish(context.Background(), memindex.EventSubject("ns"), b); err != nil {
			t.Fatal(err)
		}
	}
}

// ackFloor is the stream sequence the partition's consumer has
// acknowledged through; 0 while the worker re-creates it.
func (r *pipelineRig) ackFloor() uint64 {
	c, err := r.js.Consumer(context.Background(), memindex.StreamEvents, consumer.ConsumerName(consumer.DefaultConsumerPrefix, 0))
	if err != nil {
		return 0
	}
	info, err := c.Info(context.Background())
	if err != nil {
		return 0
	}
	return info.AckFloor.Stream
}

// wantCleanChunking checks that the shard holds messages 1..n of the
// session, chunked as chunking them all at once would.
func (r *pipelineRig) wantCleanChunking(t *testing.T, n int64) {
	t.Helper()
	ctx := context.Background()
	ref := store.SessionRef{Namespace: "ns", SessionKey: "chat", SessionID: "s1"}
	msgs, err := r.sh.SessionMessages(ctx, ref, 1, 0)
	if err != nil || int64(len(msgs)) != n {
		t.Fatalf("SessionMessages() = %d messages, %v; want %d", len(msgs), err, n)
	}
	cm := make([]chunker.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chunker.Message{Seq: m.Seq, ID: m.ID, Role: m.Role, Speaker: m.Speaker, Text: m.Text, Time: m.Time}
	}
	clean := chunker.Session(chunker.Config{BudgetTokens: 120}, "ns\x00chat\x00s1", cm)
	spans, err := r.sh.SessionChunkSpans(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, s := range spans {
		got = append(got, s.ID)
	}
	for _, c := range clean {
		want = append(want, c.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("stored chunks %v, want the clean chunking %v", got, want)
	}
	if err := r.sh.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPipelineCommitsInOrderAndAcksOnlyWhatCommitted: the next batch is
// fetched, planned and embedded while the one before commits, yet while that
// commit fails (and is retried in place) nothing is acknowledged and the next
// batch does not commit; once it succeeds both commit, in order, and the
// shard holds exactly the clean chunking of the session.
func TestPipelineCommitsInOrderAndAcksOnlyWhatCommitted(t *testing.T) {
	r := newPipelineRig(t)
	gate := make(chan error)
	r.sh.setGate(gate)
	r.publish(t, 1, 10, "first")
	var first uint64
	select {
	case first = <-r.sh.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the first batch never reached Apply")
	}
	r.publish(t, 11, 20, "second")
	waitFor(t, "the second batch embedded while the first commits", func() bool { return r.emb.saw("second") })
	for range 2 { // the first batch's commit fails twice and is retried in place
		gate <- errors.New("disk full")
		select {
		case seq := <-r.sh.entered:
			if seq != first {
				t.Fatalf("after a failed commit of batch seq %d, Apply got seq %d: want the same batch retried", first, seq)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the failed batch was not retried")
		}
		if got := r.ackFloor(); got != 0 {
			t.Fatalf("ack floor %d while the first batch has not committed, want 0", got)
		}
		if got := r.sh.committed(); len(got) != 0 {
			t.Fatalf("committed %v while the first batch fails, want nothing", got)
		}
	}
	r.sh.setGate(nil)
	gate <- nil
	waitFor(t, "both batches committed and acknowledged", func() bool { return r.ackFloor() == 20 })
	if got := r.sh.committed(); !slices.Equal(got, []uint64{10, 20}) {
		t.Fatalf("committed batches through seqs %v, want [10 20]", got)
	}
	r.wantCleanChunking(t, 20)
}

// TestPipelineDropsTheNextBatchWhenACommitIsAbandoned: when the batch in
// commit is given up (here its lease ended: ErrFenced), the batch prepared
// behind it is not committed nor acknowledged either; the worker
// re-positions from the shard and applies every event once.
func TestPipelineDropsTheNextBatchWhenACommitIsAbandoned(t *testing.T) {
	r := newPipelineRig(t)
	gate := make(chan error)
	r.sh.setGate(gate)
	r.publish(t, 1, 10, "first")
	select {
	case <-r.sh.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the first batch never reached Apply")
	}
	r.publish(t, 11, 20, "second")
	waitFor(t, "the second batch embedded while the first commits", func() bool { return r.emb.saw("second") })
	r.sh.setGate(nil)
	gate <- fmt.Errorf("lease gone: %w", consumer.ErrFenced)
	waitFor(t, "every event applied after the re-position", func() bool { return r.ackFloor() == 20 })
	got := r.sh.committed()
	if len(got) == 0 || got[len(got)-1] != 20 || !slices.IsSorted(got) {
		t.Fatalf("committed batches through seqs %v, want increasing and ending at 20", got)
	}
	r.wantCleanChunking(t, 20)
}
