package query

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"memindex"
	"memindex/embedder"
	"memindex/store"
)

func TestMMRPushesNearDuplicatesDown(t *testing.T) {
	hits := []memindex.Hit{
		{ID: "a", Score: 1.0, Text: "Ana moves to Lisbon in May with her cat"},
		{ID: "a2", Score: 0.95, Text: "Ana moves to Lisbon in May with her cat!"},
		{ID: "b", Score: 0.9, Text: "Ben adopts a dog named Rex"},
		{ID: "c", Score: 0.5, Text: "the weather was rainy"},
	}
	tests := []struct {
		name   string
		lambda float64
		k      int
		want   string
	}{
		{"off keeps the order", 1, 3, "a a2 b"},
		{"0.7 moves the near-duplicate below a different hit", 0.7, 3, "a b a2"},
		{"0 picks the fully novel ones first, ties in order", 0, 4, "a b c a2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ids []string
			for _, h := range mmr(append([]memindex.Hit(nil), hits...), tt.k, tt.lambda) {
				ids = append(ids, h.ID)
			}
			if got := strings.Join(ids, " "); got != tt.want {
				t.Fatalf("mmr(λ=%g)=%q, want %q", tt.lambda, got, tt.want)
			}
		})
	}
}

func TestApplyDecay(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hits := []memindex.Hit{
		{ID: "old", Score: 1, Source: memindex.SourceSessions, Timestamp: now.Add(-48 * time.Hour).Format(time.RFC3339)},
		{ID: "file", Score: 0.8, Source: memindex.SourceFiles, Timestamp: now.Add(-480 * time.Hour).Format(time.RFC3339)},
		{ID: "new", Score: 0.6, Source: memindex.SourceRecords, Timestamp: now.Format(time.RFC3339)},
	}
	applyDecay(hits, 24*time.Hour, now)
	want := []struct {
		id    string
		score float64
	}{{"file", 0.8}, {"new", 0.6}, {"old", 0.25}}
	for i, w := range want {
		if hits[i].ID != w.id || math.Abs(hits[i].Score-w.score) > 1e-9 {
			t.Fatalf("applyDecay()[%d] = %s %.3f, want %s %.3f", i, hits[i].ID, hits[i].Score, w.id, w.score)
		}
	}
}

func TestEngineAbstainsOnNonsense(t *testing.T) {
	sh := &memShard{chunks: []memChunk{{rec: store.ChunkRecord{ID: "c1", Namespace: "ns", Text: "harbour notes"}, vec: []float32{1, 0}}}}
	weak := embedder.Func{EmbedFunc: func(ctx context.Context, req embedder.Request) ([][]float32, error) {
		return [][]float32{{-1, 0.001}}, nil // opposite to every chunk
	}, Desc: embedder.Info{Dims: 2}}
	e := NewEngine(EngineConfig{}, RouterFunc(func(string) (Searcher, int, error) { return sh, 0, nil }), weak)
	resp, err := e.Search(context.Background(), memindex.SearchRequest{Namespace: "ns", Query: "xqzv blorft"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Abstained == "" || len(resp.Hits) != 0 {
		t.Fatalf("nonsense query: abstained=%q hits=%v; want an abstention and no hits", resp.Abstained, resp.Hits)
	}
	resp, err = e.Search(context.Background(), memindex.SearchRequest{Namespace: "ns", Query: "harbour"})
	if err != nil || resp.Abstained != "" || len(resp.Hits) != 1 {
		t.Fatalf("a matching query: abstained=%q hits=%v, %v; want the hit", resp.Abstained, resp.Hits, err)
	}
}
