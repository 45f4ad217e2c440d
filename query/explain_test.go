package query

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"memindex"
	"memindex/embedder"
	"memindex/store"
)

// realShard opens a shard file in a temp dir and applies records to it, with
// vectors from the built-in embedder.
func realShard(t *testing.T, recs ...store.Chunk) (*store.Shard, embedder.Embedder) {
	t.Helper()
	ctx := context.Background()
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{})
	mustTB(t, err)
	sh, err := store.Open(ctx, filepath.Join(t.TempDir(), "p0.db"), store.Config{Dims: emb.Info().Dims})
	mustTB(t, err)
	t.Cleanup(func() { sh.Close(context.Background()) })
	b := store.Batch{Seq: 1}
	for _, c := range recs {
		vs, err := emb.Embed(ctx, embedder.Request{Texts: []string{c.Text}, Kind: embedder.KindDocument})
		mustTB(t, err)
		c.Vector = vs[0]
		b.Records = append(b.Records, store.RecordUpsert{Chunk: c})
	}
	_, err = sh.Apply(ctx, b)
	mustTB(t, err)
	return sh, emb
}

func record(id, text string, at time.Time) store.Chunk {
	return store.Chunk{ID: "r-" + id, Namespace: "agent-7", Source: memindex.SourceRecords, Path: id,
		SessionKey: "k", SessionID: "s", Text: text, TimeStart: at, TimeEnd: at}
}

func TestSearchUpdatedAfterFiltersRecords(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	sh, emb := realShard(t,
		record("old", "The user prefers tea in the morning.", t0),
		record("new", "The user prefers coffee in the morning.", t0.Add(48*time.Hour)),
	)
	e := NewEngine(EngineConfig{}, routeTo(sh), emb)
	tests := []struct {
		name string
		req  memindex.SearchRequest
		want []string
	}{
		{"no bound", memindex.SearchRequest{}, []string{"new", "old"}},
		{"updatedAfter between", memindex.SearchRequest{UpdatedAfter: t0.Add(time.Hour).Format(time.RFC3339)}, []string{"new"}},
		{"updatedAfter equal to the newer", memindex.SearchRequest{UpdatedAfter: t0.Add(48 * time.Hour).Format(time.RFC3339)}, []string{"new"}},
		{"after the newer", memindex.SearchRequest{UpdatedAfter: t0.Add(49 * time.Hour).Format(time.RFC3339)}, nil},
		{"the later of after and updatedAfter", memindex.SearchRequest{After: t0.Add(-time.Hour).Format(time.RFC3339),
			UpdatedAfter: t0.Add(time.Hour).Format(time.RFC3339)}, []string{"new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Namespace, req.Query, req.Sources, req.Mode = "agent-7", "morning prefers", []string{memindex.SourceRecords}, memindex.ModeKeyword
			resp, err := e.Search(context.Background(), req)
			mustTB(t, err)
			var got []string
			for _, h := range resp.Hits {
				got = append(got, h.RecordID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("records %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("bad time names the field", func(t *testing.T) {
		_, err := e.Search(context.Background(), memindex.SearchRequest{Namespace: "agent-7", Query: "tea", UpdatedAfter: "yesterday"})
		var fe *memindex.FieldError
		if !errors.As(err, &fe) || fe.Field != "updatedAfter" {
			t.Fatalf("err %v, want a field error naming updatedAfter", err)
		}
	})
}

func TestSearchExplainSaysWhatEachStageDid(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	sh, emb := realShard(t,
		record("a", "Caroline went to the LGBTQ support group on Sunday.", t0),
		record("b", "Melanie painted a sunrise over the lake.", t0),
		record("c", "Caroline is researching adoption agencies.", t0),
	)
	e := NewEngine(EngineConfig{}, routeTo(sh), emb)
	base := memindex.SearchRequest{Namespace: "agent-7", Query: "Where did Caroline go on Sunday?", K: 2}

	plain, err := e.Search(context.Background(), base)
	mustTB(t, err)
	if plain.Explain != nil || plain.Hits[0].Scores != nil {
		t.Fatalf("explain off: stages %v, scores %v; want none", plain.Explain, plain.Hits[0].Scores)
	}

	req := base
	req.Explain, req.MMR, req.HalfLifeHours = true, true, 24
	resp, err := e.Search(context.Background(), req)
	mustTB(t, err)
	var names []string
	byName := map[string]memindex.Stage{}
	for _, s := range resp.Explain {
		names = append(names, s.Stage)
		byName[s.Stage] = s
	}
	want := []string{"keyword", "vector", "fusion", "minScore", "abstention", "hydrate", "decay", "mmr"}
	if !slices.Equal(names, want) {
		t.Fatalf("stages %v, want %v", names, want)
	}
	if kw := byName["keyword"]; kw.Out != resp.Legs.Keyword.Hits || kw.Out == 0 || !strings.Contains(kw.Detail, `"caroline"`) || !strings.Contains(kw.Detail, `"sunday"`) {
		t.Fatalf("keyword stage %+v: want its candidates (%d) and the MATCH terms", kw, resp.Legs.Keyword.Hits)
	}
	if v := byName["vector"]; v.Out != resp.Legs.Vector.Hits || v.Out != 3 {
		t.Fatalf("vector stage %+v: want 3 candidates", v)
	}
	if f := byName["fusion"]; f.In != byName["keyword"].Out+byName["vector"].Out || f.Out != 3 || !strings.Contains(f.Detail, "reciprocal rank fusion") {
		t.Fatalf("fusion stage %+v: want in = both legs' candidates, out = 3 distinct chunks", f)
	}
	if m := byName["mmr"]; m.Out != 2 || len(resp.Hits) != 2 {
		t.Fatalf("mmr stage %+v with %d hits, want 2", m, len(resp.Hits))
	}
	for i, h := range resp.Hits {
		s := h.Scores
		if s == nil || s.Fusion != memindex.FusionRRF || s.MMRRank != i+1 || s.Decay <= 0 || s.Decay >= 1 || (s.KeywordRank == 0 && s.VectorRank == 0) {
			t.Fatalf("hit %d scores %+v: want per-leg ranks, the fusion, an MMR rank %d and a decay factor in (0,1)", i, s, i+1)
		}
	}
	if resp.Hits[0].RecordID != "a" {
		t.Fatalf("first hit %s, want a", resp.Hits[0].RecordID)
	}
}
