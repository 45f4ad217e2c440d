package query

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"memindex"
	"memindex/embedder"
	"memindex/store"
)

// TestSearchReportsVectorFallback searches a real shard opened with
// sqlite-vec disabled: the vector leg answers from the Go scan and the
// response says why; a keyword-only search (vector leg not run) and a shard
// with sqlite-vec say nothing.
func TestSearchReportsVectorFallback(t *testing.T) {
	if store.VectorModeGoScan != memindex.VectorModeGoScan || store.VectorModeSqliteVec != memindex.VectorModeSqliteVec {
		t.Fatal("store and wire vector mode names differ")
	}
	ctx := context.Background()
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{})
	mustTB(t, err)
	texts := []string{"Ana moves to Lisbon in May.", "Ben repairs his bicycle on Sundays.", "The harbour is busy in summer."}
	for _, sqliteVec := range []bool{false, true} {
		sh, err := store.Open(ctx, filepath.Join(t.TempDir(), "p0.db"), store.Config{Dims: emb.Info().Dims, NoSqliteVec: !sqliteVec})
		mustTB(t, err)
		t.Cleanup(func() { sh.Close(context.Background()) })
		vs, err := emb.Embed(ctx, embedder.Request{Texts: texts, Kind: embedder.KindDocument})
		mustTB(t, err)
		b := store.Batch{Seq: 1}
		for i, text := range texts {
			b.Records = append(b.Records, store.RecordUpsert{Chunk: store.Chunk{ID: "r" + string(rune('0'+i)), Namespace: "agent-7",
				Source: memindex.SourceRecords, Path: "rec" + string(rune('0'+i)), Text: text, Vector: vs[i]}})
		}
		_, err = sh.Apply(ctx, b)
		mustTB(t, err)

		e := NewEngine(EngineConfig{}, routeTo(sh), emb)
		resp, err := e.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "who moves to Lisbon", Mode: memindex.ModeVector})
		mustTB(t, err)
		if !resp.Legs.Vector.Answered || len(resp.Hits) == 0 || !strings.Contains(resp.Hits[0].Text, "Lisbon") {
			t.Fatalf("sqlite-vec %t: vector search legs %+v hits %+v, want Lisbon first", sqliteVec, resp.Legs, resp.Hits)
		}
		want := ""
		if !sqliteVec {
			want = "go-scan: sqlite-vec disabled by configuration"
		}
		if resp.VectorFallback != want {
			t.Fatalf("sqlite-vec %t: vectorFallback %q, want %q", sqliteVec, resp.VectorFallback, want)
		}
		kw, err := e.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon", Mode: memindex.ModeKeyword})
		mustTB(t, err)
		if kw.VectorFallback != "" {
			t.Fatalf("sqlite-vec %t: keyword search says %q, want nothing: the vector leg did not run", sqliteVec, kw.VectorFallback)
		}
	}
}
