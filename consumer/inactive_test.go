package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
)

// TestUnusedConsumersGoAfterTheInactiveThreshold: a running worker's
// consumers stay however long it runs; once it stops, JetStream removes them
// after the threshold; a worker started again re-creates them from its
// shards and applies nothing twice.
func TestUnusedConsumersGoAfterTheInactiveThreshold(t *testing.T) {
	const threshold = time.Second
	h := newHarness(t)
	h.shutdown()
	h.inactive = threshold
	h.start()
	const ns = "inactive"
	for i := int64(1); i <= 5; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("hello %d", i)))
	}
	waitFor(t, "5 messages", func() bool { return h.stats(ns).Messages == 5 })
	ctx := context.Background()
	name := consumer.ConsumerName(consumer.DefaultConsumerPrefix, memindex.Partition(ns, testPartitions))
	info := func() (*jetstream.ConsumerInfo, error) {
		c, err := h.js.Consumer(ctx, memindex.StreamEvents, name)
		if err != nil {
			return nil, err
		}
		return c.Info(ctx)
	}
	ci, err := info()
	if err != nil {
		t.Fatalf("consumer %s: %v", name, err)
	}
	if ci.Config.InactiveThreshold != threshold {
		t.Fatalf("consumer %s inactive threshold %s, want %s", name, ci.Config.InactiveThreshold, threshold)
	}
	// While the worker runs it always has a pull waiting: the consumer
	// outlives several thresholds.
	for end := time.Now().Add(3 * threshold); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if _, err := info(); err != nil {
			t.Fatalf("consumer %s of a running worker: %v; want it kept", name, err)
		}
	}
	before := h.stats(ns)
	h.shutdown()
	waitFor(t, "the stopped worker's consumer to be removed", func() bool {
		_, err := info()
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})
	h.start()
	for i := int64(6); i <= 8; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("hello %d", i)))
	}
	waitFor(t, "8 messages", func() bool { return h.stats(ns).Messages == 8 })
	if got := h.stats(ns); got.AppliedSeq <= before.AppliedSeq {
		t.Fatalf("AppliedSeq %d after the restart, want past %d", got.AppliedSeq, before.AppliedSeq)
	}
	if _, err := info(); err != nil {
		t.Fatalf("consumer %s after the restart: %v; want it re-created", name, err)
	}
}
