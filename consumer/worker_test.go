package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/chunker"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natstest"
	"memindex/store"
)

const (
	testDims       = 64
	testPartitions = 4
)

// harness is a worker on a real in-process JetStream server with real
// SQLite shards in a temporary directory.
type harness struct {
	t      *testing.T
	js     jetstream.JetStream
	nc     *nats.Conn
	dir    string
	emb    embedder.Embedder
	shards map[int]*store.Shard
	stop   func()
	// inactive is the worker's Config.InactiveThreshold.
	inactive time.Duration
	// contextMessages is the chunker's ContextMessages (0: its default).
	contextMessages int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessWith(t, emb)
}

// newHarnessWith is newHarness with the worker embedding through emb.
func newHarnessWith(t *testing.T, emb embedder.Embedder) *harness {
	t.Helper()
	return newHarnessSet(t, emb, func(*harness) {})
}

// newHarnessSet is newHarnessWith with set applied to the harness before
// its worker starts.
func newHarnessSet(t *testing.T, emb embedder.Embedder, set func(*harness)) *harness {
	t.Helper()
	return newHarnessOn(t, natstest.Connect(t, natstest.Server(t)), emb, set)
}

// newHarnessOn is newHarnessSet with the worker on connection nc.
func newHarnessOn(t *testing.T, nc *nats.Conn, emb embedder.Embedder, set func(*harness)) *harness {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if p, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: testPartitions}); err != nil || p != testPartitions {
		t.Fatalf("EnsureStreams() = %d, %v; want %d", p, err, testPartitions)
	}
	h := &harness{t: t, js: js, nc: nc, dir: t.TempDir(), emb: emb}
	set(h)
	h.start()
	t.Cleanup(h.shutdown)
	return h
}

func (h *harness) shardPath(p int) string { return filepath.Join(h.dir, fmt.Sprintf("p%d.db", p)) }

// start opens the shards and runs a worker owning every partition.
func (h *harness) start() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.shards = make(map[int]*store.Shard)
	seams := make(map[int]consumer.Shard)
	parts := make([]int, testPartitions)
	for p := range testPartitions {
		sh, err := store.Open(ctx, h.shardPath(p), store.Config{Dims: testDims})
		if err != nil {
			h.t.Fatalf("store.Open: %v", err)
		}
		h.shards[p], seams[p], parts[p] = sh, sh, p
	}
	w, err := consumer.New(h.js, consumer.Config{
		Partitions: parts, BatchSize: 200, BackfillInterval: 50 * time.Millisecond,
		Chunker:           chunker.Config{BudgetTokens: 120, ContextMessages: h.contextMessages},
		InactiveThreshold: h.inactive,
	}, seams, h.emb)
	if err != nil {
		h.t.Fatalf("consumer.New: %v", err)
	}
	if err := w.Start(ctx); err != nil {
		h.t.Fatalf("Start: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	h.stop = func() {
		cancel()
		<-done
		for _, sh := range h.shards {
			_ = sh.Close(context.Background())
		}
	}
}

func (h *harness) shutdown() {
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

func (h *harness) publish(ns string, payload []byte) {
	h.t.Helper()
	if _, err := h.js.Publish(context.Background(), memindex.EventSubject(ns), payload); err != nil {
		h.t.Fatalf("publish: %v", err)
	}
}

func (h *harness) publishEvent(e memindex.Event) {
	h.t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		h.t.Fatal(err)
	}
	h.publish(e.Namespace, b)
}

func message(ns, key, id string, seq int64, text string) memindex.Event {
	return memindex.Event{Type: memindex.TypeMessage, Namespace: ns, SessionKey: key, SessionID: id, Seq: seq,
		ID: fmt.Sprintf("%s-%d", id, seq), Speaker: "Ana", Text: text, Timestamp: "2026-11-30T09:00:00Z"}
}

func (h *harness) shardOf(ns string) *store.Shard {
	return h.shards[memindex.Partition(ns, testPartitions)]
}

func (h *harness) stats(ns string) store.Stats {
	h.t.Helper()
	st, err := h.shardOf(ns).Stats(context.Background())
	if err != nil {
		h.t.Fatalf("Stats: %v", err)
	}
	return st
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) dlq() []consumer.DeadLetter {
	h.t.Helper()
	ds, err := consumer.ListDLQ(context.Background(), h.js, 1, 1000)
	if err != nil {
		h.t.Fatalf("ListDLQ: %v", err)
	}
	return ds
}

func TestIngestIndexesAndRechunksOnlyTheTail(t *testing.T) {
	h := newHarness(t)
	const ns = "agent-7"
	for i := int64(1); i <= 40; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("message number %d talks about topic%d and the weather in Berlin", i, i)))
	}
	waitFor(t, "40 messages", func() bool { st := h.stats(ns); return st.Messages == 40 && st.VectorsWaiting == 0 })
	ref := store.SessionRef{Namespace: ns, SessionKey: "chat", SessionID: "s1"}
	before, err := h.shardOf(ns).SessionChunkSpans(context.Background(), ref)
	if err != nil || len(before) < 3 {
		t.Fatalf("SessionChunkSpans() = %d spans, %v; want at least 3", len(before), err)
	}
	for i := int64(41); i <= 45; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("late message %d", i)))
	}
	waitFor(t, "45 messages", func() bool { return h.stats(ns).Messages == 45 })
	after, err := h.shardOf(ns).SessionChunkSpans(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	// Every chunk but the old tail is kept unchanged.
	for i, s := range before[:len(before)-1] {
		if after[i] != s {
			t.Fatalf("chunk %d changed on append: got %+v, want %+v", i, after[i], s)
		}
	}
	if last := after[len(after)-1]; last.SeqEnd != 45 {
		t.Fatalf("last chunk ends at seq %d, want 45", last.SeqEnd)
	}
	got, err := h.shardOf(ns).KeywordSearch(context.Background(), ns, "topic17", store.Filter{}, 5)
	if err != nil || len(got) == 0 {
		t.Fatalf("KeywordSearch(topic17) = %v, %v; want a hit", got, err)
	}
	recs, err := h.shardOf(ns).ChunksByID(context.Background(), []string{got[0].ID})
	if err != nil || !strings.Contains(recs[got[0].ID].Text, "topic17") {
		t.Fatalf("hit text = %q, %v; want it to contain topic17", recs[got[0].ID].Text, err)
	}
}

func TestBadInputGoesToDLQAndNeighboursAreIndexed(t *testing.T) {
	h := newHarness(t)
	const ns = "tenant"
	valid := func(seq int64) []byte {
		b, _ := json.Marshal(message(ns, "chat", "s1", seq, fmt.Sprintf("valid message %d", seq)))
		return b
	}
	bad := []struct {
		name    string
		subject string
		payload []byte
		reason  string
	}{
		{"malformed JSON", ns, []byte(`{"type":"message",`), "not a JSON object"},
		{"invalid UTF-8", ns, []byte("{\"type\":\"message\",\"text\":\"\xff\xfe\"}"), "UTF-8"},
		{"unknown type", ns, []byte(`{"type":"message.exploded","sessionKey":"chat"}`), "field type"},
		{"missing field", ns, []byte(`{"type":"message","sessionId":"s1","seq":9,"text":"no key"}`), "field sessionKey"},
		{"oversized text", ns, []byte(`{"type":"message","sessionKey":"chat","sessionId":"s1","seq":9,"text":"` + strings.Repeat("x", memindex.MaxTextBytes+1) + `"}`), "field text"},
		{"bad namespace", "bad!namespace", []byte(`{"type":"message","sessionKey":"chat","sessionId":"s1","seq":9,"text":"hi"}`), "namespace"},
		{"wrong namespace", ns, []byte(`{"type":"message","namespace":"other","sessionKey":"chat","sessionId":"s1","seq":9,"text":"hi"}`), "field namespace"},
	}
	seq := int64(1)
	for _, b := range bad {
		h.publish(ns, valid(seq))
		seq++
		h.publish(b.subject, b.payload)
	}
	h.publish(ns, valid(seq))
	waitFor(t, "valid messages and dead letters", func() bool {
		return h.stats(ns).Messages == seq && len(h.dlq()) == len(bad)
	})
	// Partitions run independently, so dead letters are matched by payload.
	ds := h.dlq()
	var missing consumer.DeadLetter
	for _, b := range bad {
		var found *consumer.DeadLetter
		for i := range ds {
			if string(ds[i].Data) == string(b.payload) && ds[i].Namespace == b.subject {
				found = &ds[i]
			}
		}
		switch {
		case found == nil:
			t.Errorf("%s: not in the DLQ", b.name)
		case !strings.Contains(found.Reason, b.reason):
			t.Errorf("%s: DLQ reason %q, want it to mention %q", b.name, found.Reason, b.reason)
		case b.name == "missing field":
			missing = *found
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// An operator fixes the missing-field event and replays it.
	fixed := []byte(`{"type":"message","sessionKey":"chat","sessionId":"s1","seq":100,"text":"fixed and replayed"}`)
	if _, err := consumer.ReplayDLQ(context.Background(), h.js, missing.Seq, fixed, false); err != nil {
		t.Fatalf("ReplayDLQ: %v", err)
	}
	waitFor(t, "replayed event", func() bool { return h.stats(ns).Messages == seq+1 && len(h.dlq()) == len(bad)-1 })
}

func TestSessionDeletedRemovesEverything(t *testing.T) {
	h := newHarness(t)
	const ns = "deleter"
	for i := int64(1); i <= 20; i++ {
		h.publishEvent(message(ns, "keep", "s1", i, fmt.Sprintf("kept words %d", i)))
		h.publishEvent(message(ns, "drop", "s1", i, fmt.Sprintf("doomed zebra words %d", i)))
	}
	waitFor(t, "40 messages", func() bool { st := h.stats(ns); return st.Messages == 40 && st.VectorsWaiting == 0 })
	h.publishEvent(memindex.Event{Type: memindex.TypeSessionDeleted, Namespace: ns, SessionKey: "drop"})
	waitFor(t, "deletion", func() bool { return h.stats(ns).Messages == 20 })
	st := h.stats(ns)
	if st.Sessions != 1 {
		t.Fatalf("Sessions = %d, want 1", st.Sessions)
	}
	got, err := h.shardOf(ns).KeywordSearch(context.Background(), ns, "zebra", store.Filter{}, 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("KeywordSearch(zebra) = %v, %v; want nothing", got, err)
	}
	vec, _ := h.emb.Embed(context.Background(), embedder.Request{Texts: []string{"doomed zebra words"}, Kind: embedder.KindQuery})
	vs, err := h.shardOf(ns).VectorSearch(context.Background(), ns, vec[0], store.Filter{SessionKey: "drop"}, 10)
	if err != nil || len(vs) != 0 {
		t.Fatalf("VectorSearch(session drop) = %v, %v; want nothing", vs, err)
	}
}

func TestDeletedShardIsRebuiltWithTheSameChunks(t *testing.T) {
	h := newHarness(t)
	const ns = "rebuild"
	for i := int64(1); i <= 60; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("turn %d of a long chat about sailing and bread", i)))
	}
	waitFor(t, "60 messages", func() bool { st := h.stats(ns); return st.Messages == 60 && st.VectorsWaiting == 0 })
	ref := store.SessionRef{Namespace: ns, SessionKey: "chat", SessionID: "s1"}
	before, _ := h.shardOf(ns).SessionChunkSpans(context.Background(), ref)
	statsBefore := h.stats(ns)

	h.shutdown()
	p := memindex.Partition(ns, testPartitions)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		_ = removeIfExists(h.shardPath(p) + suffix)
	}
	h.start()
	waitFor(t, "rebuild", func() bool { st := h.stats(ns); return st.Messages == 60 && st.VectorsWaiting == 0 })
	after, _ := h.shardOf(ns).SessionChunkSpans(context.Background(), ref)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("chunks after rebuild = %v, want %v", after, before)
	}
	if got := h.stats(ns); got.Chunks != statsBefore.Chunks || got.AppliedSeq != statsBefore.AppliedSeq {
		t.Fatalf("stats after rebuild = %+v, want %+v", got, statsBefore)
	}
}

func TestRestartDoesNotApplyTwice(t *testing.T) {
	h := newHarness(t)
	const ns = "restart"
	for i := int64(1); i <= 30; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("hello %d", i)))
	}
	waitFor(t, "30 messages", func() bool { return h.stats(ns).Messages == 30 })
	before := h.stats(ns)
	h.shutdown()
	h.start()
	for i := int64(31); i <= 35; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("hello %d", i)))
	}
	waitFor(t, "35 messages", func() bool { return h.stats(ns).Messages == 35 })
	if got := h.stats(ns); got.AppliedSeq <= before.AppliedSeq {
		t.Fatalf("AppliedSeq = %d after restart, want > %d", got.AppliedSeq, before.AppliedSeq)
	}
}

func TestPartitionMatchesServerTransform(t *testing.T) {
	h := newHarness(t)
	s, err := h.js.Stream(context.Background(), memindex.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "agent-7", "Tenant_42", "zz", "x-y-z", strings.Repeat("n", 64)}
	for i := range 40 {
		names = append(names, fmt.Sprintf("ns%d", i))
	}
	for _, ns := range names {
		ack, err := h.js.Publish(context.Background(), memindex.EventSubject(ns), []byte(`{"type":"nope"}`))
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.GetMsg(context.Background(), ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		if want := memindex.StoredEventSubject(memindex.Partition(ns, testPartitions), ns); m.Subject != want {
			t.Fatalf("stored subject of %q = %q, want %q", ns, m.Subject, want)
		}
	}
}

func TestEnsureStreamsKeepsThePartitionCount(t *testing.T) {
	h := newHarness(t)
	_, err := consumer.EnsureStreams(context.Background(), h.js, consumer.StreamConfig{Partitions: testPartitions + 1})
	if !errors.Is(err, consumer.ErrPartitionsChanged) {
		t.Fatalf("EnsureStreams(P+1) = %v, want ErrPartitionsChanged", err)
	}
	if p, err := consumer.EnsureStreams(context.Background(), h.js, consumer.StreamConfig{}); err != nil || p != testPartitions {
		t.Fatalf("EnsureStreams(P unset) = %d, %v; want the stream's %d", p, err, testPartitions)
	}
}

// TestNoChunkContext appends to a session batch after batch with no
// context messages (ContextMessages -1, what serve --chunk-context 0
// gives): the planner kept a negative count of messages before a chunk and
// sliced past the end of the session's tail, killing the worker.
func TestNoChunkContext(t *testing.T) {
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessSet(t, emb, func(h *harness) { h.contextMessages = -1 })
	for seq := int64(1); seq <= 4; seq++ {
		h.publishEvent(message("nc", "chat", "s1", seq, fmt.Sprintf("message number %d about tulips", seq)))
		waitFor(t, fmt.Sprintf("message %d applied", seq), func() bool { return h.stats("nc").Messages == seq })
	}
}
