package query

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memindex"
	"memindex/client"
	"memindex/embedder"
	"memindex/store"
)

// testTexts are the records writeTestShards stores in namespace agent-7.
var testTexts = []string{"Ana moves to Lisbon in May.", "Ben repairs his bicycle on Sundays.", "The harbour is busy in summer."}

// writeTestShards writes a data directory as `memindex serve` lays it out
// (shards/p0.db, one partition) holding testTexts as records of agent-7
// with built-in embedder vectors and space, and returns the data directory.
func writeTestShards(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	data := tb.TempDir()
	mustTB(tb, os.MkdirAll(filepath.Join(data, "shards"), 0o755))
	sh := openTestShard(tb, filepath.Join(data, "shards", "p0.db"))
	applyTexts(tb, sh, 1, testTexts...)
	mustTB(tb, sh.Close(ctx))
	return data
}

// openTestShard opens (read-write) a shard with the built-in embedder's
// dims and space.
func openTestShard(tb testing.TB, path string) *store.Shard {
	tb.Helper()
	emb := builtin(tb)
	sh, err := store.Open(context.Background(), path, store.Config{Dims: emb.Info().Dims, Space: spaceOf(emb.Info())})
	mustTB(tb, err)
	return sh
}

func builtin(tb testing.TB) *embedder.Builtin {
	tb.Helper()
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{})
	mustTB(tb, err)
	return emb
}

// applyTexts stores texts as records r<seq>-<i> of agent-7 at stream seq.
func applyTexts(tb testing.TB, sh *store.Shard, seq uint64, texts ...string) {
	tb.Helper()
	ctx := context.Background()
	vs, err := builtin(tb).Embed(ctx, embedder.Request{Texts: texts, Kind: embedder.KindDocument})
	mustTB(tb, err)
	b := store.Batch{Seq: seq}
	for i, text := range texts {
		id := "r" + string(rune('0'+seq)) + "-" + string(rune('0'+i))
		b.Records = append(b.Records, store.RecordUpsert{Chunk: store.Chunk{ID: id, Namespace: "agent-7",
			Source: memindex.SourceRecords, Path: id, Text: text, Vector: vs[i]}})
	}
	_, err = sh.Apply(ctx, b)
	mustTB(tb, err)
}

// TestLocalBackend opens a data directory read-only, searches both legs
// with the built-in embedder the shards record, reports status, and sees
// later writes after Sync.
func TestLocalBackend(t *testing.T) {
	ctx := context.Background()
	data := writeTestShards(t)
	for _, path := range []string{data, filepath.Join(data, "shards"), filepath.Join(data, "shards", "p0.db")} {
		m, err := client.Open(ctx, client.Config{Backend: client.BackendLocal, Local: client.LocalConfig{Path: path, Opener: Local{}}})
		if err != nil {
			t.Fatalf("Open(local %s): %v", path, err)
		}
		resp, err := m.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "who moves to Lisbon"})
		if err != nil {
			t.Fatalf("%s: Search: %v", path, err)
		}
		if resp.Backend != client.BackendLocal || !resp.Legs.Vector.Answered || !resp.Legs.Keyword.Answered || len(resp.Hits) == 0 || !strings.Contains(resp.Hits[0].Text, "Lisbon") {
			t.Fatalf("%s: Search()=backend %q legs %+v hits %+v, want local, both legs, Lisbon first", path, resp.Backend, resp.Legs, resp.Hits)
		}
		if err := m.ProbeEmbeddings(ctx); err != nil {
			t.Fatalf("%s: ProbeEmbeddings: %v", path, err)
		}
		sts, err := m.Status(ctx)
		if err != nil || len(sts) != 1 || sts[0].Backend != client.BackendLocal || len(sts[0].Partitions) != 1 || sts[0].Partitions[0].Chunks != 3 {
			t.Fatalf("%s: Status()=%+v, %v, want one local status with 3 chunks", path, sts, err)
		}
		mustTB(t, m.Close(ctx))
	}

	m, err := client.Open(ctx, client.Config{Backend: client.BackendLocal, Local: client.LocalConfig{Path: data, Opener: Local{}}})
	mustTB(t, err)
	defer m.Close(ctx)
	w := openTestShard(t, filepath.Join(data, "shards", "p0.db"))
	defer w.Close(ctx)
	applyTexts(t, w, 2, "The lighthouse keeper feeds seven cats.")
	mustTB(t, m.Sync(ctx, client.SyncRequest{}))
	resp, err := m.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "lighthouse cats"})
	if err != nil || len(resp.Hits) == 0 || !strings.Contains(resp.Hits[0].Text, "lighthouse") || resp.AppliedSeq != 2 {
		t.Fatalf("Search after Sync = %+v, %v, want the new record first at applied seq 2", resp.Hits, err)
	}
}

// TestLocalBackendKeywordOnly: without an embedder for the shards' space
// the local backend runs keyword-only and says so.
func TestLocalBackendKeywordOnly(t *testing.T) {
	ctx := context.Background()
	data := writeTestShards(t)
	m, err := client.Open(ctx, client.Config{Backend: client.BackendLocal, Local: client.LocalConfig{Path: data, KeywordOnly: true, Opener: Local{}}})
	mustTB(t, err)
	defer m.Close(ctx)
	resp, err := m.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon"})
	if err != nil || resp.Legs.Vector.Ran || len(resp.Hits) == 0 || !strings.Contains(strings.Join(resp.Degraded, ";"), "keyword-only") {
		t.Fatalf("Search()=legs %+v degraded %q, %v, want keyword-only saying so", resp.Legs, resp.Degraded, err)
	}
	if err := m.ProbeVectors(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("ProbeVectors()=%v, want ErrUnavailable", err)
	}
	if _, err := client.Open(ctx, client.Config{Backend: client.BackendLocal, Local: client.LocalConfig{Path: t.TempDir(), Opener: Local{}}}); err == nil || !strings.Contains(err.Error(), "no shard files") {
		t.Fatalf("Open(empty dir)=%v, want an error saying no shard files", err)
	}
}
