package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex/consumer"
)

// TestABatchBehindIsNotCutByAPause: a partition that starts behind (every
// event already in the stream) commits full batches, although its worker
// ends a batch after a pause of a nanosecond: while the stream holds more
// events for the consumer, a pause is the pull buffer waiting for its
// refill, and the batch waits for it (nextWait). Every batch but the last
// holds at least BatchSize events; with the nanosecond as the only wait,
// batches end whenever the 20-event pull buffer runs dry.
func TestABatchBehindIsNotCutByAPause(t *testing.T) {
	const events, batch = 200, 10
	r := newPipelineRigWith(t, consumer.Config{BatchSize: batch, MaxBatch: 2 * batch, BatchWait: time.Nanosecond}, func(js jetstream.JetStream) {
		for i := range events {
			publishJSON(t, js, "ns", message("ns", fmt.Sprintf("chat-%d", i%7), "s1", int64(i/7)+1, fmt.Sprintf("message %d about the harbour", i)))
		}
	})
	waitFor(t, "every event applied", func() bool {
		seq, err := r.sh.AppliedSeq(context.Background())
		return err == nil && seq == events
	})
	sizes := r.sh.batchSizes()
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
