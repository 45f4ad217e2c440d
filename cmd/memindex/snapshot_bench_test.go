package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/internal/corpus"
	"memindex/node"
	"memindex/store"
)

// TestMovePartitionBench measures moving one partition to a worker that
// does not have it: by snapshot (snapshot + upload, then download + verify
// + open) versus by replay (rebuild from the stream, with the embedding
// cache warm and cold). Opt-in: MEMINDEX_MOVE_BENCH=1 (it ingests
// MEMINDEX_MOVE_BENCH_MESSAGES generated messages, default 150,000, which
// gives about 100,000 chunks); run it without -race:
//
//	MEMINDEX_MOVE_BENCH=1 go test -tags sqlite_fts5 -run TestMovePartitionBench -v -timeout 30m ./cmd/memindex/
func TestMovePartitionBench(t *testing.T) {
	if os.Getenv("MEMINDEX_MOVE_BENCH") != "1" {
		t.Skip("set MEMINDEX_MOVE_BENCH=1 to measure moving a partition by snapshot and by replay")
	}
	msgs := 150000
	if v, err := strconv.Atoi(os.Getenv("MEMINDEX_MOVE_BENCH_MESSAGES")); err == nil && v > 0 {
		msgs = v
	}
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testServeConfig(dir)
	cfg.PartitionCount = 1
	cfg.ChunkTokens, cfg.ChunkContext = node.DefaultChunkTokens, node.DefaultChunkContext // serve's defaults
	n, stop := runTestNode(t, cfg, nil)
	js, err := jetstream.New(n.Conn())
	if err != nil {
		t.Fatal(err)
	}
	g := corpus.New(42)
	start := time.Now()
	sent := 0
	for s := 0; sent < msgs; s++ {
		ns := fmt.Sprintf("agent-%d", s%100)
		for _, m := range g.Session("chat", fmt.Sprintf("s%d", s), min(100, msgs-sent)) {
			b, _ := json.Marshal(memindex.Event{Type: memindex.TypeMessage, Namespace: ns, SessionKey: m.SessionKey, SessionID: m.SessionID,
				Seq: m.Seq, ID: m.ID, Speaker: m.Speaker, Text: m.Text})
			if _, err := js.PublishAsync(memindex.EventSubject(ns), b); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		if s%20 == 0 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	waitUntil(t, 20*time.Minute, "the ingest", func() bool {
		st, err := n.Shards()[0].Stats(ctx)
		return err == nil && st.Messages == int64(msgs) && st.VectorsWaiting == 0
	})
	st, _ := n.Shards()[0].Stats(ctx)
	t.Logf("ingested %d messages into %d chunks in %.1fs", st.Messages, st.Chunks, time.Since(start).Seconds())
	shardFile := node.ShardPath(filepath.Join(dir, "shards"), 0) // the first generation's
	stop()

	rebuild := func(args ...string) node.RebuildEvent {
		t.Helper()
		var out bytes.Buffer
		args = append([]string{"--data", dir, "--partition", "0", "--json"}, args...)
		if err := runRebuild(ctx, args, &out); err != nil {
			t.Fatalf("rebuild %v: %v", args, err)
		}
		d := jsonLines(t, out.String(), "rebuild.done")
		if len(d) != 1 || d[0].Chunks != st.Chunks || d[0].AppliedSeq != st.AppliedSeq {
			t.Fatalf("rebuild %v: %s, want %d chunks at seq %d", args, out.String(), st.Chunks, st.AppliedSeq)
		}
		return d[0]
	}
	var out bytes.Buffer
	t0 := time.Now()
	if err := runSnapshot(ctx, []string{"--data", dir, "--partition", "0", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	snapTook := time.Since(t0)
	var snap struct {
		Info struct {
			Size int64 `json:"size"`
		} `json:"info"`
		Seconds float64 `json:"seconds"`
	}
	_ = json.Unmarshal(out.Bytes(), &snap)
	// The receiving worker has no shard: by snapshot it downloads,
	// verifies and opens it; by replay it rebuilds from the stream.
	restore := rebuild("--from-snapshot")
	warm := rebuild()
	if err := os.Remove(filepath.Join(dir, "cache.db")); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(filepath.Join(dir, "cache.db") + s)
	}
	cold := rebuild()
	t.Logf("partition of %d chunks (%d messages), snapshot file %.1f MiB", st.Chunks, st.Messages, float64(snap.Info.Size)/(1<<20))
	t.Logf("by snapshot: snapshot+upload %.2fs (command %.2fs), download+verify+open %.2fs, total %.2fs",
		snap.Seconds, snapTook.Seconds(), restore.Seconds, snap.Seconds+restore.Seconds)
	t.Logf("by replay: warm embedding cache %.2fs, cold cache %.2fs", warm.Seconds, cold.Seconds)

	// Memory an open shard of this size costs a worker (sizing): Go heap
	// (the in-memory vector index, id maps) and resident set (adds
	// SQLite's page cache and the mapped file).
	heap0, rss0 := memNow()
	sh, err := store.Open(ctx, shardFile, store.Config{Dims: 384})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sh.KeywordSearch(ctx, "agent-1", "garden trip", store.Filter{}, 10); err != nil {
		t.Logf("warm-up search: %v", err)
	}
	heap1, rss1 := memNow()
	t.Logf("open shard of %d chunks: Go heap +%.1f MiB, resident +%.1f MiB", st.Chunks, float64(heap1-heap0)/(1<<20), float64(rss1-rss0)/(1<<20))
	_ = sh.Close(ctx)
}

// memNow returns the Go heap in use after a collection and the process's
// resident set size, in bytes.
func memNow() (heap, rss uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			rss = kb << 10
		}
	}
	return ms.HeapInuse, rss
}
