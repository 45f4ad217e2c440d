package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/natstest"
)

// TestServerRestartRepositionsTheConsumers restarts the nats-server under a
// running worker, on the same port and store. The worker's consumers keep
// their state in the server's memory, so the restarted server has none of
// them: the worker must notice (the pull heartbeat) and re-create them from
// its shards, and every event published before and after the restart must
// be indexed once, within the time a restart may take (waitFor's 20 s; the
// 30 s of nats.go's default heartbeat would not do).
func TestServerRestartRepositionsTheConsumers(t *testing.T) {
	store := t.TempDir()
	s := natstest.ServerIn(t, store)
	port := s.Addr().(*net.TCPAddr).Port
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessOn(t, nc, emb, func(*harness) {})
	js, ctx := h.js, context.Background()

	const ns = "restarted"
	for i := int64(1); i <= 20; i++ {
		h.publishEvent(message(ns, "chat", "s1", i, fmt.Sprintf("before the restart %d", i)))
	}
	waitFor(t, "20 messages", func() bool { return h.stats(ns).Messages == 20 })
	p := memindex.Partition(ns, testPartitions)
	info, err := js.Consumer(ctx, memindex.StreamEvents, consumer.ConsumerName(consumer.DefaultConsumerPrefix, p))
	if err != nil {
		t.Fatal(err)
	}
	if !info.CachedInfo().Config.MemoryStorage {
		t.Fatalf("consumer of partition %d keeps its state in files; want memory", p)
	}

	s.Shutdown()
	s.WaitForShutdown()
	natstest.ServerWith(t, store, func(o *server.Options) { o.Port = port })
	for i := int64(21); i <= 40; i++ {
		b, err := json.Marshal(message(ns, "chat", "s1", i, fmt.Sprintf("after the restart %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		// Retried until the restarted server takes it; the message id
		// keeps a retry whose first try was stored from storing it twice.
		waitFor(t, fmt.Sprintf("publish of message %d", i), func() bool {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := js.Publish(pctx, memindex.EventSubject(ns), b, jetstream.WithMsgID(fmt.Sprintf("after-%d", i)))
			return err == nil
		})
	}
	waitFor(t, "40 messages", func() bool { return h.stats(ns).Messages == 40 })
	if st := h.stats(ns); st.Messages != 40 || st.Sessions != 1 {
		t.Fatalf("stats = %+v; want 40 messages in 1 session", st)
	}
}
