package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// TestStaticOwnerServesARebuildingPartitionOnceCaughtUp: a static worker
// whose shard of a partition is gone (a new disk, a deleted file) rebuilds
// it from the stream and, until it has caught up, answers that partition's
// searches with 503 "catching up" instead of partial results; its other
// partitions serve at once.
func TestStaticOwnerServesARebuildingPartitionOnceCaughtUp(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	n, stop := runTestNode(t, cfg, nil)
	js, err := jetstream.New(n.nc)
	if err != nil {
		t.Fatal(err)
	}
	namespaces := testNamespaces(16)
	publishNamespaces(t, js, namespaces)
	waitUntil(t, 30*time.Second, "every namespace indexed", func() bool {
		var msgs int64
		for _, sh := range n.shardsNow() {
			st, err := sh.Stats(context.Background())
			if err != nil {
				return false
			}
			msgs += st.Messages
		}
		return msgs == int64(len(namespaces))
	})
	lost := memindex.Partition(namespaces[0], cfg.PartitionCount)
	path := ShardPath(n.serving.dir, lost)
	stop()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}

	// Started, not yet running: nothing of the lost partition is applied.
	n, err = Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for p := range cfg.PartitionCount {
		if got, want := n.holds(p), p != lost; got != want {
			t.Fatalf("partition %d serving=%v before the rebuild, want %v (partition %d lost its shard)", p, got, want, lost)
		}
	}
	st := n.status(context.Background())
	for _, ps := range st.Partitions {
		want := memindex.StateReady
		if ps.Partition == lost {
			want = memindex.StateCatchingUp
		}
		if ps.State != want || ps.Role != memindex.RoleOwner {
			t.Fatalf("status of partition %d: state %q role %q, want %q owner", ps.Partition, ps.State, ps.Role, want)
		}
	}
	for _, ns := range namespaces {
		hits, err := searchRaw(n.nc, ns)
		switch p := memindex.Partition(ns, cfg.PartitionCount); {
		case p == lost && (err == nil || !strings.HasPrefix(err.Error(), "503") || !strings.Contains(err.Error(), "catching up")):
			t.Fatalf("search %s of the rebuilding partition %d: %d hits, %v; want a 503 that says it is catching up", ns, p, hits, err)
		case p != lost && (err != nil || hits == 0):
			t.Fatalf("search %s of partition %d: %d hits, %v; want its message", ns, p, hits, err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	waitUntil(t, 30*time.Second, fmt.Sprintf("partition %d caught up and serving", lost), func() bool { return n.holds(lost) })
	for _, ns := range namespaces {
		if hits, err := searchRaw(n.nc, ns); err != nil || hits == 0 {
			t.Fatalf("search %s after the rebuild: %d hits, %v; want its message", ns, hits, err)
		}
	}
}
