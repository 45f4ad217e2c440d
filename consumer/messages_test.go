package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/store"
)

// TestMessagesEventIndexesEachMessage: a messages event applies as its
// messages sent one an event would, a message without a timestamp gets the
// time the stream stored the event, and a messages event holding one bad
// message is dead-lettered whole, with the message named, while the events
// around it are indexed.
func TestMessagesEventIndexesEachMessage(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const ns = "agent-9"
	ref := store.SessionRef{Namespace: ns, SessionKey: "chat", SessionID: "s1"}
	start := time.Now().Add(-time.Second)

	h.publishEvent(message(ns, "chat", "s1", 1, "we land in Lisbon on Thursday"))
	h.publishEvent(memindex.Event{Type: memindex.TypeMessages, Namespace: ns, SessionKey: "chat", SessionID: "s1", Messages: []memindex.Message{
		{Seq: 2, ID: "m2", Role: "user", Speaker: "Ana", Text: "book the quokka tour", Timestamp: "2026-11-30T09:00:00Z"},
		{Seq: 3, MessageID: "D1:3", Role: "assistant", Text: "the tour leaves at nine"}, // no timestamp
		{Seq: 4, ID: "m4", Speaker: "Ana", ImageCaption: "a beagle on a ferry", Timestamp: "2026-11-30T09:02:00Z"},
	}})
	bad, err := json.Marshal(memindex.Event{Type: memindex.TypeMessages, Namespace: ns, SessionKey: "chat", SessionID: "s1", Messages: []memindex.Message{
		{Seq: 5, Text: "this one is fine"}, {Seq: 6, Text: "   "},
	}})
	if err != nil {
		t.Fatal(err)
	}
	h.publish(ns, bad)
	h.publishEvent(message(ns, "chat", "s1", 5, "the ferry to Cacilhas"))

	waitFor(t, "5 messages and a dead letter", func() bool { return h.stats(ns).Messages == 5 && len(h.dlq()) == 1 })
	msgs, err := h.shardOf(ns).SessionMessages(ctx, ref, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		seq              int64
		id, role, speak  string
		text             string
		stamped, ofEvent bool // timestamp from the stream, or the event's own
	}{
		{1, "s1-1", "", "Ana", "we land in Lisbon on Thursday", false, true},
		{2, "m2", "user", "Ana", "book the quokka tour", false, true},
		{3, "D1:3", "assistant", "", "the tour leaves at nine", true, false},
		{4, "m4", "", "Ana", "[image: a beagle on a ferry]", false, true},
		{5, "s1-5", "", "Ana", "the ferry to Cacilhas", false, true},
	}
	if len(msgs) != len(want) {
		t.Fatalf("session holds %d messages, want %d: %+v", len(msgs), len(want), msgs)
	}
	for i, w := range want {
		m := msgs[i]
		if m.Seq != w.seq || m.ID != w.id || m.Role != w.role || m.Speaker != w.speak || m.Text != w.text {
			t.Errorf("message %d = seq %d id %q role %q speaker %q text %q; want %+v", i, m.Seq, m.ID, m.Role, m.Speaker, m.Text, w)
		}
		if w.stamped && (m.Time.Before(start) || m.Time.After(time.Now().Add(time.Second))) {
			t.Errorf("message %d without a timestamp has time %v, want the time the stream stored it (after %v)", w.seq, m.Time, start)
		}
		if w.ofEvent && !m.Time.Before(start) {
			t.Errorf("message %d has time %v, want its own of 2026-11-30", w.seq, m.Time)
		}
	}
	// The two messages after seq 2 hold it as context: they match too,
	// below it.
	got, err := h.shardOf(ns).KeywordSearch(ctx, ns, "quokka", store.Filter{}, 5)
	if err != nil || len(got) == 0 {
		t.Fatalf("KeywordSearch(quokka) = %v, %v; want the message of seq 2 first", got, err)
	}
	recs, err := h.shardOf(ns).ChunksByID(ctx, []string{got[0].ID})
	if r := recs[got[0].ID]; err != nil || r.SeqStart != 2 || r.Text != "Ana: book the quokka tour" {
		t.Fatalf("KeywordSearch(quokka) first hit = %+v, %v; want the message of seq 2", r, err)
	}
	d := h.dlq()[0]
	if !strings.Contains(d.Reason, "messages[1].text") || d.Payload != string(bad) {
		t.Fatalf("dead letter reason %q, payload %q; want the bad event, naming messages[1].text", d.Reason, d.Payload)
	}
}

// TestMessagesEventsOfManySessions: messages events of several sessions,
// each continuing its session across events, as an import sends them,
// index every message once with the session's chunks in order.
func TestMessagesEventsOfManySessions(t *testing.T) {
	h := newHarness(t)
	const ns, sessions, per, rounds = "agent-10", 7, 30, 5
	for r := range rounds {
		for s := range sessions {
			e := memindex.Event{Type: memindex.TypeMessages, Namespace: ns, SessionKey: fmt.Sprintf("chat-%d", s), SessionID: "s1"}
			for i := range per {
				seq := int64(r*per + i + 1)
				e.Messages = append(e.Messages, memindex.Message{Seq: seq, Speaker: "Ana",
					Text: fmt.Sprintf("session %d message %d about topic%d", s, seq, seq), Timestamp: "2026-11-30T09:00:00Z"})
			}
			h.publishEvent(e)
		}
	}
	total := int64(sessions * per * rounds)
	waitFor(t, fmt.Sprintf("%d messages", total), func() bool { st := h.stats(ns); return st.Messages == total && st.VectorsWaiting == 0 })
	for s := range sessions {
		ref := store.SessionRef{Namespace: ns, SessionKey: fmt.Sprintf("chat-%d", s), SessionID: "s1"}
		msgs, err := h.shardOf(ns).SessionMessages(context.Background(), ref, 1, 1000)
		if err != nil || len(msgs) != per*rounds {
			t.Fatalf("session %d: %d messages, %v; want %d", s, len(msgs), err, per*rounds)
		}
		for i, m := range msgs {
			if m.Seq != int64(i+1) || m.Text != fmt.Sprintf("session %d message %d about topic%d", s, i+1, i+1) {
				t.Fatalf("session %d message %d = seq %d %q", s, i, m.Seq, m.Text)
			}
		}
		spans, err := h.shardOf(ns).SessionChunkSpans(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		next := int64(1)
		for _, sp := range spans {
			if sp.SeqStart != next {
				t.Fatalf("session %d: chunk spans %+v do not cover seqs 1.. in order", s, spans)
			}
			next = sp.SeqEnd + 1
		}
		if next != int64(per*rounds+1) {
			t.Fatalf("session %d: chunk spans end at %d, want %d", s, next-1, per*rounds)
		}
	}
}

// TestABatchCountsMessagesNotEvents: a batch's limit counts a messages
// event's messages. A partition behind by 30 events of 5 messages commits
// batches of at most MaxBatch (20) messages, so 4 events; counting events,
// a batch would take 20 of them, 100 messages.
func TestABatchCountsMessagesNotEvents(t *testing.T) {
	const events, per, batch = 30, 5, 10
	r := newPipelineRigWith(t, consumer.Config{BatchSize: batch, MaxBatch: 2 * batch}, func(js jetstream.JetStream) {
		for i := range events {
			e := memindex.Event{Type: memindex.TypeMessages, Namespace: "ns", SessionKey: fmt.Sprintf("chat-%d", i%3), SessionID: "s1"}
			for j := range per {
				seq := int64(i/3*per + j + 1)
				e.Messages = append(e.Messages, memindex.Message{Seq: seq, Text: fmt.Sprintf("event %d message %d about the harbour", i, j)})
			}
			publishJSON(t, js, "ns", e)
		}
	})
	waitFor(t, "every event applied", func() bool {
		seq, err := r.sh.AppliedSeq(context.Background())
		return err == nil && seq == events
	})
	sizes := r.sh.batchSizes()
	total := 0
	for _, n := range sizes {
		total += n
		if n > 2*batch {
			t.Fatalf("a batch held %d messages, over MaxBatch %d (sizes %v)", n, 2*batch, sizes)
		}
	}
	if total != events*per {
		t.Fatalf("batches held %d messages (sizes %v), want %d", total, sizes, events*per)
	}
}

// TestABatchGrowsWhileTheCommitBeforeRuns: while the commit stage is busy
// with a batch, the next one takes the events that arrive meanwhile up to
// MaxBatch messages, though the stream holds fewer events than BatchSize
// messages: 12 events of 5 messages (60) published while the first batch
// waits at the gate are prepared as one batch of 60 before the gate opens,
// and commit as one. Counting the events waiting against BatchSize
// (before) cut them into batches of 20, and only the first of those was
// prepared while the gate held.
func TestABatchGrowsWhileTheCommitBeforeRuns(t *testing.T) {
	const events, per, batch = 12, 5, 20
	r := newPipelineRigWith(t, consumer.Config{BatchSize: batch, MaxBatch: 3 * batch, BatchWait: 200 * time.Millisecond}, nil)
	event := func(i int) memindex.Event {
		e := memindex.Event{Type: memindex.TypeMessages, Namespace: "ns", SessionKey: fmt.Sprintf("chat-%d", i%3), SessionID: "s1"}
		for j := range per {
			e.Messages = append(e.Messages, memindex.Message{Seq: int64(i/3*per + j + 1), Text: fmt.Sprintf("event %d message %d about the harbour", i, j)})
		}
		return e
	}
	gate := make(chan error)
	r.sh.setGate(gate)
	defer close(gate) // a failure below must not leave the first batch at the gate
	publishJSON(t, r.js, "ns", event(0))
	select {
	case <-r.sh.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the first batch never reached the gate")
	}
	for i := 1; i <= events; i++ {
		publishJSON(t, r.js, "ns", event(i))
	}
	waitFor(t, "the last event prepared while the first batch waits", func() bool {
		return r.emb.saw(fmt.Sprintf("event %d message %d ", events, per-1))
	})
	r.sh.setGate(nil)
	gate <- nil
	waitFor(t, "every event applied", func() bool {
		seq, err := r.sh.AppliedSeq(context.Background())
		return err == nil && seq == events+1
	})
	if sizes := r.sh.batchSizes(); !slices.Equal(sizes, []int{per, events * per}) {
		t.Fatalf("batches held %v messages, want [%d %d]: the events that arrived during the first commit in one batch", sizes, per, events*per)
	}
}

// publishJSON publishes v's JSON as an event of namespace ns.
func publishJSON(t *testing.T, js jetstream.JetStream, ns string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), memindex.EventSubject(ns), b); err != nil {
		t.Fatal(err)
	}
}

// TestMessagesEventsAroundADeletionInOneBatch: a messages event, the
// session's deletion and another messages event, all in one batch (a
// partition behind commits them together), leave the session holding only
// the second event's messages; a later messages event re-sending a seq
// replaces that message.
func TestMessagesEventsAroundADeletionInOneBatch(t *testing.T) {
	batchOf := func(seqs []int64, word string) memindex.Event {
		e := memindex.Event{Type: memindex.TypeMessages, Namespace: "ns", SessionKey: "chat", SessionID: "s1"}
		for _, s := range seqs {
			e.Messages = append(e.Messages, memindex.Message{Seq: s, Text: fmt.Sprintf("message %d of the %s part", s, word)})
		}
		return e
	}
	r := newPipelineRigWith(t, consumer.Config{BatchSize: 100, MaxBatch: 100}, func(js jetstream.JetStream) {
		publishJSON(t, js, "ns", batchOf([]int64{1, 2, 3}, "old"))
		publishJSON(t, js, "ns", memindex.Event{Type: memindex.TypeSessionDeleted, Namespace: "ns", SessionKey: "chat", SessionID: "s1"})
		publishJSON(t, js, "ns", batchOf([]int64{1, 2}, "new"))
	})
	ctx := context.Background()
	waitFor(t, "the three events applied", func() bool {
		seq, err := r.sh.AppliedSeq(ctx)
		return err == nil && seq == 3
	})
	if sizes := r.sh.batchSizes(); len(sizes) != 1 {
		t.Fatalf("batches %v, want the three events in one", sizes)
	}
	ref := store.SessionRef{Namespace: "ns", SessionKey: "chat", SessionID: "s1"}
	texts := func() []string {
		msgs, err := r.sh.SessionMessages(ctx, ref, 1, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, fmt.Sprintf("%d:%s", m.Seq, m.Text))
		}
		return out
	}
	if got, want := strings.Join(texts(), "|"), "1:message 1 of the new part|2:message 2 of the new part"; got != want {
		t.Fatalf("session after the batch: %s, want %s", got, want)
	}
	publishJSON(t, r.js, "ns", batchOf([]int64{2, 3}, "later"))
	waitFor(t, "the fourth event applied", func() bool {
		seq, err := r.sh.AppliedSeq(ctx)
		return err == nil && seq == 4
	})
	if got, want := strings.Join(texts(), "|"), "1:message 1 of the new part|2:message 2 of the later part|3:message 3 of the later part"; got != want {
		t.Fatalf("session after re-sending seq 2: %s, want %s", got, want)
	}
}
