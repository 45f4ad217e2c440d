package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
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

// slotsRig is a worker of two partitions over gated shards, committing at
// most slots batches at once.
type slotsRig struct {
	js     jetstream.JetStream
	w      *consumer.Worker
	ns     [2]string // a namespace of each partition
	shards [2]*gatedShard
}

// newSlotsRig's set, when given, changes the worker's configuration.
func newSlotsRig(t *testing.T, slots int, set ...func(*consumer.Config)) *slotsRig {
	t.Helper()
	s := natstest.Server(t)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	r := &slotsRig{js: js}
	for i := 0; r.ns[0] == "" || r.ns[1] == ""; i++ {
		ns := fmt.Sprintf("ns%d", i)
		if p := memindex.Partition(ns, 2); r.ns[p] == "" {
			r.ns[p] = ns
		}
	}
	seams := map[int]consumer.Shard{}
	for p := range 2 {
		inner, err := store.Open(ctx, filepath.Join(t.TempDir(), fmt.Sprintf("p%d.db", p)), store.Config{Dims: testDims})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inner.Close(context.Background()) })
		r.shards[p] = &gatedShard{Shard: inner, entered: make(chan uint64, 16)}
		seams[p] = r.shards[p]
	}
	b, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	cfg := consumer.Config{Partitions: []int{0, 1}, BatchSize: 10, CommitConcurrency: slots,
		Chunker: chunker.Config{BudgetTokens: 120}}
	for _, f := range set {
		f(&cfg)
	}
	r.w, err = consumer.New(js, cfg, seams, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = r.w.Run(ctx) }()
	t.Cleanup(func() {
		for _, sh := range r.shards {
			sh.setGate(nil)
		}
		cancel()
		<-done
	})
	return r
}

// publish sends one message to partition p's namespace.
func (r *slotsRig) publish(t *testing.T, p int, seq int64) {
	t.Helper()
	b, err := json.Marshal(message(r.ns[p], "chat", "s1", seq, fmt.Sprintf("message %d", seq)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.js.Publish(context.Background(), memindex.EventSubject(r.ns[p]), b); err != nil {
		t.Fatal(err)
	}
}

// waiting says whether the worker's status shows partition p waiting for
// a commit slot.
func (r *slotsRig) waiting(p int) bool {
	for _, ps := range r.w.Status(context.Background()) {
		if ps.Partition == p {
			return ps.CommitWaiting
		}
	}
	return false
}

// With one commit slot, a partition whose batch is ready waits while the
// other commits (status says so), and commits once the other is done.
func TestOneCommitSlotSerialisesPartitions(t *testing.T) {
	r := newSlotsRig(t, 1)
	gate := make(chan error)
	t.Cleanup(func() { close(gate) }) // before the rig's: a failed test does not leave partition 0 held
	r.shards[0].setGate(gate)
	r.publish(t, 0, 1)
	receive(t, r.shards[0].entered, "partition 0 to start to commit") // it holds the slot, inside Apply
	r.publish(t, 1, 1)
	waitFor(t, "partition 1 to wait for a commit slot", func() bool { return r.waiting(1) })
	if got := r.shards[1].committed(); len(got) != 0 {
		t.Fatalf("partition 1 committed %v while partition 0 held the only slot", got)
	}
	gate <- nil
	waitFor(t, "partition 1 to commit after partition 0", func() bool { return len(r.shards[1].committed()) == 1 })
	if r.waiting(1) {
		t.Fatal("partition 1 still shown waiting after its commit")
	}
	if got := r.shards[0].committed(); len(got) != 1 {
		t.Fatalf("partition 0 committed %v, want its one batch", got)
	}
	for _, ps := range r.w.Status(context.Background()) {
		if ps.Commits != 1 {
			t.Fatalf("status of partition %d: %d commits, want 1", ps.Partition, ps.Commits)
		}
	}
}

// publishFull sends partition p's namespace one messages event of the
// rig's BatchSize messages in session key sk, a batch that is behind.
func (r *slotsRig) publishFull(t *testing.T, p int, sk string) {
	t.Helper()
	e := memindex.Event{Type: memindex.TypeMessages, Namespace: r.ns[p], SessionKey: sk, SessionID: "s1"}
	for seq := int64(1); seq <= 10; seq++ {
		e.Messages = append(e.Messages, memindex.Message{Seq: seq, Speaker: "Ana", Text: fmt.Sprintf("message %d", seq)})
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.js.Publish(context.Background(), memindex.EventSubject(r.ns[p]), b); err != nil {
		t.Fatal(err)
	}
}

// With two slots, two full batches commit at once: each is inside Apply
// while the other is.
func TestTwoCommitSlotsCommitFullBatchesTogether(t *testing.T) {
	r := newSlotsRig(t, 2)
	gates := [2]chan error{make(chan error), make(chan error)}
	t.Cleanup(func() { close(gates[0]); close(gates[1]) })
	for p := range 2 {
		r.shards[p].setGate(gates[p])
		r.publishFull(t, p, "import")
	}
	for p := range 2 {
		receive(t, r.shards[p].entered, fmt.Sprintf("partition %d to start to commit beside the other", p))
	}
	for p := range 2 {
		gates[p] <- nil
	}
	for p := range 2 {
		waitFor(t, fmt.Sprintf("partition %d to commit", p), func() bool { return len(r.shards[p].committed()) == 1 })
	}
}

// With two slots, a batch below BatchSize takes only the first: a small
// batch waits while another small one commits, and a full batch commits
// beside it meanwhile in the second.
func TestSmallBatchesTakeHalfTheCommitSlots(t *testing.T) {
	r := newSlotsRig(t, 2)
	gates := [2]chan error{make(chan error), make(chan error)}
	t.Cleanup(func() { close(gates[0]); close(gates[1]) })
	r.shards[0].setGate(gates[0])
	r.publish(t, 0, 1)
	receive(t, r.shards[0].entered, "partition 0's small batch to start to commit")
	r.publish(t, 1, 1)
	waitFor(t, "partition 1's small batch to wait for a commit slot", func() bool { return r.waiting(1) })
	if got := r.shards[1].committed(); len(got) != 0 {
		t.Fatalf("partition 1's small batch committed %v in the slot for full batches", got)
	}
	gates[0] <- nil
	waitFor(t, "partition 1 to commit after partition 0", func() bool { return len(r.shards[1].committed()) == 1 })
	// Partition 1 holds the first slot with a small batch; partition 0's
	// full batch takes the second.
	r.shards[1].setGate(gates[1])
	r.publish(t, 1, 2)
	receive(t, r.shards[1].entered, "partition 1's second small batch to start to commit")
	r.shards[0].setGate(nil)
	r.publishFull(t, 0, "import")
	waitFor(t, "partition 0's full batch to commit beside partition 1's", func() bool { return len(r.shards[0].committed()) == 2 })
	gates[1] <- nil
	waitFor(t, "partition 1's second batch to commit", func() bool { return len(r.shards[1].committed()) == 2 })
}

// The commit slot is given back once a partition's transaction commits,
// not when its Apply returns: the in-memory indexes that take the batch
// after the commit run beside the next partition's transaction. Here
// partition 0 is held after its commit, and partition 1 commits meanwhile
// through the only slot; holding the slot to the end of Apply (before)
// left partition 1 waiting.
func TestTheCommitSlotIsFreeOnceTheTransactionCommits(t *testing.T) {
	r := newSlotsRig(t, 1)
	after := make(chan error)
	t.Cleanup(func() { close(after) }) // before the rig's: a failed test does not leave partition 0 held
	r.shards[0].setAfter(after)
	r.publish(t, 0, 1)
	receive(t, r.shards[0].afterEntered, "partition 0 to commit") // committed, still inside Apply
	r.publish(t, 1, 1)
	waitFor(t, "partition 1 to commit while partition 0's Apply runs after its commit", func() bool {
		return len(r.shards[1].committed()) == 1
	})
	if got := r.shards[0].committed(); len(got) != 0 {
		t.Fatalf("partition 0's Apply returned (%v) while held after its commit", got)
	}
	after <- nil
	waitFor(t, "partition 0's Apply to return", func() bool { return len(r.shards[0].committed()) == 1 })
}

// receive waits up to 20 s for a value on c, failing with what it waited
// for.
func receive(t *testing.T, c <-chan uint64, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
