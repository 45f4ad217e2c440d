package node

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"memindex/internal/natstest"
)

// testConfig is the node of most tests: an embedded server on a free port,
// data in dir, 2 partitions, the built-in embedder, HTTP endpoints and
// snapshots off.
func testConfig(dir string) Config {
	c := DefaultConfig()
	c.Listen, c.Data, c.PartitionCount, c.Worker = "127.0.0.1:-1", dir, 2, "test"
	c.Embedder.Dims, c.Batch, c.EmbedConcurrency, c.SearchPending = 384, 500, 2, 64
	c.HTTP, c.SnapshotInterval, c.CacheMaxBytes, c.ReadyLag = "off", 0, 0, 0
	return c
}

// runTestNode opens a node with cfg (log nil: discarded) and runs it until
// stop is called or the test ends.
func runTestNode(t *testing.T, cfg Config, log *slog.Logger) (n *Node, stop func()) {
	t.Helper()
	n, err := Open(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	stopRun := n.Start(context.Background())
	stop = func() {
		if err := stopRun(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return n, stop
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	natstest.WaitUntil(t, d, what, cond)
}
