package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natstest"
	"memindex/store"
)

// startLimited is newHarness with the worker's Config.Limits set to l.
func startLimited(t *testing.T, l memindex.Limits) *harness {
	t.Helper()
	s := natstest.Server(t)
	nc := natstest.Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := consumer.EnsureStreams(ctx, js, consumer.StreamConfig{Partitions: testPartitions}); err != nil {
		t.Fatalf("EnsureStreams() error %v", err)
	}
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, js: js, nc: nc, dir: t.TempDir(), emb: emb, shards: make(map[int]*store.Shard)}
	seams := make(map[int]consumer.Shard)
	parts := make([]int, testPartitions)
	for p := range testPartitions {
		sh, err := store.Open(ctx, h.shardPath(p), store.Config{Dims: testDims})
		if err != nil {
			t.Fatalf("store.Open: %v", err)
		}
		h.shards[p], seams[p], parts[p] = sh, sh, p
	}
	w, err := consumer.New(js, consumer.Config{Partitions: parts, BatchSize: 50, Limits: l}, seams, emb)
	if err != nil {
		t.Fatalf("consumer.New: %v", err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
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
	t.Cleanup(h.shutdown)
	return h
}

// TestLimitsDeadLetterWithFieldAndLimit: events over the configured caps
// (event size, text size, session length) are dead-lettered with a reason
// that names the field and the limit, never truncated, and the events
// around them are indexed.
func TestLimitsDeadLetterWithFieldAndLimit(t *testing.T) {
	h := startLimited(t, memindex.Limits{MaxEventBytes: 2000, MaxTextBytes: 100, MaxSessionMessages: 3})
	const ns = "capped"
	msg := func(id string, seq int64, text string) []byte {
		b, err := json.Marshal(message(ns, "chat", id, seq, text))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bad := []struct {
		name    string
		payload []byte
		reason  string
	}{
		{"session over", msg("s1", 4, "the fourth message of a 3-message session"),
			"field seq: is 4: the session would have 4 messages, over the limit of 3"},
		{"text over", msg("s2", 1, strings.Repeat("x", 101)), "field text: is 101 bytes, over the limit of 100"},
		{"event over", msg("s2", 2, "hi"+strings.Repeat(" ", 2000)), "over the limit of 2000"},
	}
	for seq := int64(1); seq <= 3; seq++ {
		h.publish(ns, msg("s1", seq, fmt.Sprintf("message %d within the cap", seq)))
	}
	for _, b := range bad {
		h.publish(ns, b.payload)
	}
	h.publish(ns, msg("s3", 1, "a neighbour in another session"))
	waitFor(t, "4 messages indexed and 3 dead letters", func() bool {
		return h.stats(ns).Messages == 4 && len(h.dlq()) == len(bad)
	})
	ds := h.dlq()
	for _, b := range bad {
		found := false
		for _, d := range ds {
			if string(d.Data) == string(b.payload) {
				found = true
				if !strings.Contains(d.Reason, b.reason) {
					t.Errorf("%s: DLQ reason %q, want it to contain %q", b.name, d.Reason, b.reason)
				}
			}
		}
		if !found {
			t.Errorf("%s: not in the DLQ (payload kept whole)", b.name)
		}
	}
	// The stored session holds only the three messages within the cap.
	msgs, err := h.shardOf(ns).SessionMessages(context.Background(), store.SessionRef{Namespace: ns, SessionKey: "chat", SessionID: "s1"}, 1, 10)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("SessionMessages()=%d messages, %v; want 3", len(msgs), err)
	}
}

func TestConfigRejectsBadLimits(t *testing.T) {
	cfg := consumer.Config{Partitions: []int{0}, Limits: memindex.Limits{MaxTextBytes: memindex.MaxEventBytes + 1}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "maxTextBytes") {
		t.Fatalf("Validate()=%v, want an error naming maxTextBytes", err)
	}
	cfg = consumer.Config{Partitions: []int{0}}
	if err := cfg.Validate(); err != nil || cfg.Limits != memindex.DefaultLimits() {
		t.Fatalf("Validate()=%v, limits %+v; want the defaults", err, cfg.Limits)
	}
}
