package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/store"
)

// TestPullBufferIsBoundedInBytes: while a partition's commit stage is
// stuck, what the worker holds of the stream (the batch committing, the
// batch prepared and the pull buffer) is bounded by bytes, not only by a
// count of events that may each be as large as an event can be. Then,
// the stall over, every event is indexed, the largest one allowed too.
func TestPullBufferIsBoundedInBytes(t *testing.T) {
	const (
		eventText  = 60 << 10 // each large event's text
		maxEvent   = 128 << 10
		pullBytes  = 512 << 10
		batchBytes = 200 << 10
		large      = 60 // large events behind the stuck batch
	)
	r := newPipelineRigWith(t, consumer.Config{BatchSize: 50, MaxBatch: 50, BatchWait: 50 * time.Millisecond,
		MaxBatchBytes: batchBytes, PullBufferBytes: pullBytes, Limits: memindex.Limits{MaxEventBytes: maxEvent}}, nil)
	gate := make(chan error)
	defer close(gate)
	r.sh.setGate(gate)
	r.publish(t, 1, 1, "small")
	select {
	case <-r.sh.entered: // the first batch is stuck in Apply
	case <-time.After(20 * time.Second):
		t.Fatal("the first batch never reached Apply")
	}
	publish := func(ev memindex.Event) {
		t.Helper()
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.js.Publish(context.Background(), memindex.EventSubject("ns"), b); err != nil {
			t.Fatal(err)
		}
	}
	for i := range int64(large) {
		publish(message("ns", "chat", "s1", 2+i, fmt.Sprintf("large event %d %s", 2+i, strings.Repeat("word ", eventText/5))))
	}
	// Last, an event as large as the limits accept (two texts of nearly
	// the text limit): a buffer bounded below it would never deliver it.
	first := int64(2 + large)
	text := strings.Repeat("y", (maxEvent-2048)/2)
	publish(memindex.Event{Type: memindex.TypeMessages, Namespace: "ns", SessionKey: "chat", SessionID: "s1",
		Messages: []memindex.Message{{Seq: first, Speaker: "Ana", Text: text}, {Seq: first + 1, Speaker: "Ana", Text: text}}})
	last := uint64(first) // its stream sequence

	cons, err := r.js.Consumer(context.Background(), memindex.StreamEvents, consumer.ConsumerName(consumer.DefaultConsumerPrefix, 0))
	if err != nil {
		t.Fatal(err)
	}
	var info *jetstream.ConsumerInfo
	// Settled: no pull request waits at the server (the last one ended at
	// its bytes), events wait undelivered, and a second batch was taken.
	waitFor(t, "the pull buffer to fill while the commit is stuck", func() bool {
		info, err = cons.Info(context.Background())
		return err == nil && info.NumWaiting == 0 && info.NumPending > 0 && info.NumAckPending >= 3
	})
	// The stuck batch (one small event), the prepared one (under
	// batchBytes, plus the event that passed it) and the buffer.
	bound := 1 + (batchBytes/eventText + 1) + pullBytes/eventText
	if int(info.NumAckPending) > bound {
		t.Fatalf("the worker holds %d events of about %d KiB delivered and not acknowledged, want at most %d (%d KiB of pull buffer); %d wait undelivered",
			info.NumAckPending, eventText>>10, bound, pullBytes>>10, info.NumPending)
	}
	t.Logf("held %d events, %d undelivered", info.NumAckPending, info.NumPending)

	r.sh.setGate(nil)
	gate <- nil
	waitFor(t, "every event to be committed", func() bool { return r.ackFloor() == last })
	msgs, err := r.sh.SessionMessages(context.Background(), store.SessionRef{Namespace: "ns", SessionKey: "chat", SessionID: "s1"}, 1, 0)
	if err != nil || int64(len(msgs)) != first+1 {
		t.Fatalf("SessionMessages() = %d messages, %v; want %d", len(msgs), err, first+1)
	}
}

// TestPullBufferNeverBelowTheLargestEvent: a pull buffer configured
// smaller than the largest event the limits accept is raised to hold one,
// or a pull request could never deliver that event.
func TestPullBufferNeverBelowTheLargestEvent(t *testing.T) {
	const maxEvent = 128 << 10
	r := newPipelineRigWith(t, consumer.Config{BatchSize: 10, MaxBatch: 10, BatchWait: 50 * time.Millisecond,
		PullBufferBytes: 16 << 10, Limits: memindex.Limits{MaxEventBytes: maxEvent}}, nil)
	text := strings.Repeat("z", (maxEvent-2048)/2)
	for i := range int64(3) {
		b, err := json.Marshal(memindex.Event{Type: memindex.TypeMessages, Namespace: "ns", SessionKey: "chat", SessionID: "s1",
			Messages: []memindex.Message{{Seq: 2*i + 1, Speaker: "Ana", Text: text}, {Seq: 2*i + 2, Speaker: "Ana", Text: text}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.js.Publish(context.Background(), memindex.EventSubject("ns"), b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the three largest events to be committed", func() bool { return r.ackFloor() == 3 })
}
