package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
)

func startCfg(t *testing.T, dir string, dims int) (*Node, func()) {
	t.Helper()
	cfg := testConfig(dir)
	cfg.PartitionCount, cfg.Embedder.Dims, cfg.Batch, cfg.ChunkTokens, cfg.Worker = 4, dims, 200, 120, "switch"
	n, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open(dims %d): %v", dims, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return n, stop
}

// TestEmbedderChangeWithoutDowntime restarts a worker with another embedder
// dimension on the same data: searches keep answering (the old vectors with
// the old query embedder) while the new vectors are built from the stream,
// each partition switches when caught up, and afterwards every shard holds
// only vectors of the new dimension.
func TestEmbedderChangeWithoutDowntime(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds a corpus twice")
	}
	dir := t.TempDir()
	n1, stop1 := startCfg(t, dir, 384)
	js, err := jetstream.New(n1.nc)
	if err != nil {
		t.Fatal(err)
	}
	const total = 600
	for i := 0; i < total; i++ {
		ns := []string{"alpha", "beta", "gamma"}[i%3]
		b, _ := json.Marshal(memindex.Event{Type: memindex.TypeMessage, SessionKey: fmt.Sprintf("chat-%d", i%6), SessionID: "s1",
			Seq: int64(i/6 + 1), Speaker: "Ana", Text: fmt.Sprintf("entry %d about the lighthouse, tides and keeper number %d", i, i%17)})
		if _, err := js.Publish(context.Background(), memindex.EventSubject(ns), b); err != nil {
			t.Fatal(err)
		}
	}
	count := func(n *Node) (msgs, waiting int64) {
		for _, sh := range n.shardsNow() {
			st, err := sh.Stats(context.Background())
			if err != nil {
				return -1, -1
			}
			msgs, waiting = msgs+st.Messages, waiting+st.VectorsWaiting
		}
		return msgs, waiting
	}
	waitUntil(t, 30*time.Second, "the first embedder to index everything", func() bool { m, w := count(n1); return m == total && w == 0 })
	stop1()

	n2, stop2 := startCfg(t, dir, 256)
	if !n2.switching() {
		t.Fatal("restart with another dimension did not start building a new vector set")
	}
	cl := client.NewClient(n2.nc)
	var searches, withVectors int
	var sts []memindex.StatusResponse
	sawProgress := false
	for deadline := time.Now().Add(60 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatalf("the switch did not complete; status %+v", sts)
		}
		resp, err := cl.Search(context.Background(), memindex.SearchRequest{Namespace: "beta", Query: "lighthouse keeper"})
		if err != nil || len(resp.Hits) == 0 {
			t.Fatalf("search %d during the switch = %v hits, %v; want answers throughout", searches, len(resp.Hits), err)
		}
		searches++
		if resp.Legs.Vector.Answered {
			withVectors++
		}
		if sts, err = cl.Status(context.Background(), 100*time.Millisecond); err == nil && len(sts) == 1 {
			if sts[0].Switch != nil {
				sawProgress = sawProgress || strings.HasPrefix(sts[0].Switch.To, "builtin/hash-ngram-v1/256")
			} else if !n2.switching() {
				break
			}
		}
	}
	if !sawProgress {
		t.Error("status never showed the switch in progress")
	}
	t.Logf("%d searches during the switch, %d with the vector leg answering", searches, withVectors)
	if withVectors == 0 {
		t.Error("no search used vectors during the switch; the old vectors should keep serving")
	}
	for p, sh := range n2.shardsNow() {
		if sh.Dims() != 256 {
			t.Fatalf("partition %d holds %d-dim vectors after the switch, want 256", p, sh.Dims())
		}
		if err := sh.Check(context.Background()); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
	}
	if m, w := count(n2); m != total || w != 0 {
		t.Fatalf("after the switch: %d messages, %d waiting; want %d and 0", m, w, total)
	}
	if got := readActive(filepath.Join(dir, "shards")); got == "." {
		t.Fatal("ACTIVE still names the first generation after the switch")
	}
	if _, err := os.Stat(ShardPath(filepath.Join(dir, "shards"), 0)); !os.IsNotExist(err) {
		t.Fatalf("old shard file still there after the switch: %v", err)
	}
	resp, err := cl.Search(context.Background(), memindex.SearchRequest{Namespace: "gamma", Query: "tides"})
	if err != nil || !resp.Legs.Vector.Answered || len(resp.Degraded) != 0 {
		t.Fatalf("search after the switch: vector leg %+v, degraded %q, %v", resp.Legs.Vector, resp.Degraded, err)
	}
	stop2()

	n3, _ := startCfg(t, dir, 256)
	if n3.switching() {
		t.Fatal("a restart after the switch started another one")
	}
	if m, _ := count(n3); m != total {
		t.Fatalf("after restart: %d messages, want %d", m, total)
	}
}
