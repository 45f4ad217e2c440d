package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
)

// TestLostDeliveryIsNotAcknowledgedPast: a delivery of the partition's
// consumer that never reaches the worker (here another client takes it, as
// a consumer leader change or a cut connection would lose it) leaves a gap
// in the delivery sequence. The worker must not commit and acknowledge
// (AckAll) the events after it: it re-positions and applies every event.
func TestLostDeliveryIsNotAcknowledgedPast(t *testing.T) {
	h := newHarness(t)
	const ns = "lost-delivery"
	ctx := context.Background()
	p := memindex.Partition(ns, testPartitions)
	cons, err := h.js.Consumer(ctx, memindex.StreamEvents, consumer.ConsumerName(consumer.DefaultConsumerPrefix, p))
	if err != nil {
		t.Fatal(err)
	}
	// The thief's pull waits in the consumer's queue behind the worker's;
	// it gets a delivery once the worker's pull is used up.
	stolen := make(chan uint64, 1)
	go func() {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(30*time.Second))
		if err != nil {
			stolen <- 0
			return
		}
		for m := range batch.Messages() {
			md, _ := m.Metadata()
			stolen <- md.Sequence.Stream // never acknowledged
			return
		}
		stolen <- 0
	}()
	const total = 1500
	for i := range total {
		e := message(ns, fmt.Sprintf("chat-%d", i/100), "s1", int64(i%100+1), fmt.Sprintf("note %d about the harbour", i))
		b, _ := json.Marshal(e)
		if _, err := h.js.PublishAsync(memindex.EventSubject(ns), b); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-h.js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("publishes not acknowledged")
	}
	var seq uint64
	select {
	case seq = <-stolen:
	case <-time.After(40 * time.Second):
		t.Fatal("the thief's pull got nothing")
	}
	if seq == 0 {
		t.Fatal("the thief's pull got nothing: the test shows nothing")
	}
	t.Logf("a delivery of stream sequence %d never reached the worker", seq)
	waitFor(t, fmt.Sprintf("all %d messages applied, the lost delivery's too", total), func() bool {
		return h.stats(ns).Messages == total
	})
}
