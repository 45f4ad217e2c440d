package consumer_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"memindex"
	"memindex/consumer"
	"memindex/store"
)

// TestInflightBoundHoldsAcrossPartitions: under Config.InflightBytes the
// batches of all partitions hold at most that much event payload. While
// partition 0's commit is stuck with a 60 KiB event, partition 1's next
// 60 KiB event does not fit a 100 KiB bound: it waits (status says so) and
// commits once partition 0's batch gives its bytes back. With two commit
// slots nothing else holds it. An event larger than the whole bound still
// goes through, alone.
func TestInflightBoundHoldsAcrossPartitions(t *testing.T) {
	const event = 60 << 10
	r := newSlotsRig(t, 2, func(c *consumer.Config) { c.InflightBytes = 100 << 10 })
	publish := func(p int, seq int64, size int) {
		t.Helper()
		b, err := json.Marshal(message(r.ns[p], "chat", "s1", seq, "big "+strings.Repeat("payload ", size/8)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.js.Publish(context.Background(), memindex.EventSubject(r.ns[p]), b); err != nil {
			t.Fatal(err)
		}
	}
	waiting := func(p int) bool {
		for _, ps := range r.w.Status(context.Background()) {
			if ps.Partition == p {
				return ps.InflightWaiting
			}
		}
		return false
	}
	gate := make(chan error)
	t.Cleanup(func() { close(gate) })
	r.shards[0].setGate(gate)
	publish(0, 1, event)
	select {
	case <-r.shards[0].entered: // partition 0's batch holds its 60 KiB, stuck in Apply
	case <-time.After(20 * time.Second):
		t.Fatal("partition 0 never started to commit")
	}
	publish(1, 1, event)
	waitFor(t, "partition 1 to wait for in-flight bytes", func() bool { return waiting(1) })
	if got := r.shards[1].committed(); len(got) != 0 {
		t.Fatalf("partition 1 committed %v while partition 0 held the bytes it needs", got)
	}
	r.shards[0].setGate(nil)
	gate <- nil
	waitFor(t, "partition 1 to commit once partition 0 gave its bytes back", func() bool { return len(r.shards[1].committed()) == 1 })
	if waiting(1) {
		t.Fatal("partition 1 still shown waiting after its commit")
	}
	// Larger than the whole bound (three texts of 50 KiB): it takes all of
	// it, and its messages are indexed.
	text := strings.Repeat("more ", 10<<10)
	b, err := json.Marshal(memindex.Event{Type: memindex.TypeMessages, Namespace: r.ns[1], SessionKey: "chat", SessionID: "s1",
		Messages: []memindex.Message{{Seq: 2, Speaker: "Ana", Text: text}, {Seq: 3, Speaker: "Ana", Text: text}, {Seq: 4, Speaker: "Ana", Text: text}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.js.Publish(context.Background(), memindex.EventSubject(r.ns[1]), b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an event over the bound to commit", func() bool { return len(r.shards[1].committed()) == 2 })
	msgs, err := r.shards[1].SessionMessages(context.Background(), store.SessionRef{Namespace: r.ns[1], SessionKey: "chat", SessionID: "s1"}, 1, 0)
	if err != nil || len(msgs) != 4 {
		t.Fatalf("SessionMessages() = %d messages, %v; want 4", len(msgs), err)
	}
}

// TestABatchEndsAtTheInflightBound: a batch that cannot take its next
// event's bytes ends there, and that event opens the next batch; nothing
// is lost or reordered. Ten 60 KiB events published together under a
// 150 KiB bound commit two at a time, where without it they commit in one
// batch.
func TestABatchEndsAtTheInflightBound(t *testing.T) {
	r := newPipelineRigWith(t, consumer.Config{BatchSize: 10, MaxBatch: 10, BatchWait: time.Second, InflightBytes: 150 << 10}, nil)
	for i := int64(1); i <= 10; i++ {
		b, err := json.Marshal(message("ns", "chat", "s1", i, "event "+strings.Repeat("payload ", 60<<10/8)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.js.Publish(context.Background(), memindex.EventSubject("ns"), b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "all ten events committed", func() bool { return r.ackFloor() == 10 })
	sizes := r.sh.batchSizes()
	for _, n := range sizes {
		if n > 2 {
			t.Fatalf("batches of %v messages: one held more than the two 60 KiB events a 150 KiB bound allows", sizes)
		}
	}
	msgs, err := r.sh.SessionMessages(context.Background(), store.SessionRef{Namespace: "ns", SessionKey: "chat", SessionID: "s1"}, 1, 0)
	if err != nil || len(msgs) != 10 {
		t.Fatalf("SessionMessages() = %d messages, %v; want 10", len(msgs), err)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
	}
}
