package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"memindex/node"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// TestRebuildCommandAndDataLock: a second worker cannot take a data
// directory in use; `rebuild --all` on the stopped worker's directory drops
// the shards, and the next start rebuilds them from the (embedded) stream to
// the same counts.
func TestRebuildCommandAndDataLock(t *testing.T) {
	dir := t.TempDir()
	n, stop := testNodeIn(t, dir, 4)
	if _, err := node.Open(context.Background(), testServeConfig(dir), nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second node.Open on the same data = %v, want an in-use error", err)
	}
	js, err := jetstream.New(n.Conn())
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i++ {
		e := memindex.Event{Type: memindex.TypeMessage, SessionKey: "chat", SessionID: "s1", Seq: int64(i), Speaker: "Ana",
			Text: fmt.Sprintf("message %d about gardening and tomatoes", i)}
		b, _ := json.Marshal(e)
		if _, err := js.Publish(context.Background(), memindex.EventSubject("garden"), b); err != nil {
			t.Fatal(err)
		}
	}
	counts := func(n *node.Node) (msgs, chunks int64) {
		for _, sh := range n.Shards() {
			st, err := sh.Stats(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			msgs += st.Messages
			chunks += st.Chunks
		}
		return msgs, chunks
	}
	waitUntil(t, 20*time.Second, "50 messages", func() bool { m, _ := counts(n); return m == 50 })
	_, chunksBefore := counts(n)

	var out bytes.Buffer
	if err := runRebuild(context.Background(), []string{"--data", dir, "--all"}, &out); err == nil {
		t.Fatal("rebuild while the worker runs succeeded, want the data lock to refuse it")
	}
	stop()
	if err := runRebuild(context.Background(), []string{"--data", dir, "--all"}, &out); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if !strings.Contains(out.String(), "shard removed") {
		t.Fatalf("rebuild output %q, want it to say a shard was removed", out.String())
	}
	n2, _ := testNodeIn(t, dir, 4)
	waitUntil(t, 20*time.Second, "the rebuilt shards to hold 50 messages", func() bool { m, _ := counts(n2); return m == 50 })
	if _, chunks := counts(n2); chunks != chunksBefore {
		t.Fatalf("rebuilt shards hold %d chunks, want %d", chunks, chunksBefore)
	}
}
