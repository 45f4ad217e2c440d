package query

import (
	"math"
	"slices"
	"testing"

	"memindex"
	"memindex/store"
)

func cands(pairs ...any) []store.Candidate {
	var out []store.Candidate
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, store.Candidate{ID: pairs[i].(string), Score: pairs[i+1].(float64), Rank: i/2 + 1})
	}
	return out
}

func TestFuse(t *testing.T) {
	const k = 60.0
	p := FuseParams{RRFK: k, VectorWeight: 0.7, KeywordWeight: 0.3}
	tests := []struct {
		name       string
		method     string
		vec, kw    []store.Candidate
		p          FuseParams
		wantIDs    []string
		wantScores []float64
	}{
		{
			name:   "rrf first in both legs scores 1",
			method: memindex.FusionRRF,
			vec:    cands("a", 0.9, "b", 0.8, "c", 0.7),
			kw:     cands("a", 0.5, "c", 0.4),
			p:      p,
			// a: (1/61+1/61)/(2/61); c: (1/63+1/62)/(2/61); b: (1/62)/(2/61)
			wantIDs:    []string{"a", "c", "b"},
			wantScores: []float64{1, (1/63.0 + 1/62.0) * 61 / 2, 61 / 124.0},
		},
		{
			name:       "rrf defaults k to 60 and method to rrf",
			method:     "",
			vec:        cands("a", 0.9, "b", 0.8),
			kw:         cands("b", 0.5, "a", 0.4),
			p:          FuseParams{},
			wantIDs:    []string{"a", "b"}, // equal scores: ties by ID
			wantScores: []float64{(1/61.0 + 1/62.0) * 61 / 2, (1/61.0 + 1/62.0) * 61 / 2},
		},
		{
			name:       "rrf ties broken by id",
			method:     memindex.FusionRRF,
			vec:        cands("z", 0.9),
			kw:         cands("m", 0.9),
			p:          p,
			wantIDs:    []string{"m", "z"},
			wantScores: []float64{0.5, 0.5},
		},
		{
			name:       "rrf keyword leg empty normalises over one leg",
			method:     memindex.FusionRRF,
			vec:        cands("a", 0.9, "b", 0.1),
			kw:         nil,
			p:          p,
			wantIDs:    []string{"a", "b"},
			wantScores: []float64{1, 61 / 62.0},
		},
		{
			name:       "rrf vector leg empty normalises over one leg",
			method:     memindex.FusionRRF,
			vec:        []store.Candidate{},
			kw:         cands("a", 0.9, "b", 0.1, "c", 0.05),
			p:          FuseParams{RRFK: 10},
			wantIDs:    []string{"a", "b", "c"},
			wantScores: []float64{1, 11 / 12.0, 11 / 13.0},
		},
		{
			name:       "rrf uses position when rank is unset",
			method:     memindex.FusionRRF,
			vec:        []store.Candidate{{ID: "a", Score: 1}, {ID: "b", Score: 0.5}},
			kw:         []store.Candidate{{ID: "b", Score: 1}},
			p:          p,
			wantIDs:    []string{"b", "a"},
			wantScores: []float64{(1/62.0 + 1/61.0) * 61 / 2, 0.5},
		},
		{
			name:       "weighted",
			method:     memindex.FusionWeighted,
			vec:        cands("a", 0.9, "b", 0.8),
			kw:         cands("b", 1.0, "c", 0.5),
			p:          p,
			wantIDs:    []string{"b", "a", "c"},
			wantScores: []float64{0.7*0.8 + 0.3*1.0, 0.7 * 0.9, 0.3 * 0.5},
		},
		{
			name:       "weighted default weights",
			method:     memindex.FusionWeighted,
			vec:        cands("a", 1.0),
			kw:         cands("a", 0.5),
			p:          FuseParams{},
			wantIDs:    []string{"a"},
			wantScores: []float64{0.7 + 0.15},
		},
		{
			name:       "weighted one leg empty uses its score alone",
			method:     memindex.FusionWeighted,
			vec:        nil,
			kw:         cands("a", 0.8, "b", 0.4),
			p:          p,
			wantIDs:    []string{"a", "b"},
			wantScores: []float64{0.8, 0.4},
		},
		{
			name:       "weighted ties broken by id",
			method:     memindex.FusionWeighted,
			vec:        cands("b", 0.5, "a", 0.5),
			kw:         nil,
			p:          p,
			wantIDs:    []string{"a", "b"},
			wantScores: []float64{0.5, 0.5},
		},
		{
			name:       "both legs empty",
			method:     memindex.FusionRRF,
			p:          p,
			wantIDs:    []string{},
			wantScores: []float64{},
		},
		{
			name:       "duplicate id in one leg keeps the best rank",
			method:     memindex.FusionRRF,
			vec:        cands("a", 0.9, "a", 0.1),
			p:          p,
			wantIDs:    []string{"a"},
			wantScores: []float64{1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Fuse(tt.method, tt.vec, tt.kw, tt.p)
			gotScores := make([]float64, len(got))
			for i, f := range got {
				gotScores[i] = f.Score
			}
			if !slices.Equal(ids(got), tt.wantIDs) || !nearAll(gotScores, tt.wantScores) {
				t.Fatalf("Fuse()=%v %v, want %v %v", ids(got), gotScores, tt.wantIDs, tt.wantScores)
			}
			for _, f := range got {
				if f.Score <= 0 || f.Score > 1+1e-12 {
					t.Fatalf("Fuse() score of %s = %v, want in (0,1]", f.ID, f.Score)
				}
			}
		})
	}
}

func TestFuseKeepsLegScoresAndRanks(t *testing.T) {
	got := Fuse(memindex.FusionRRF, cands("a", 0.9, "b", 0.8), cands("b", 0.6), FuseParams{})
	want := []Fused{
		{ID: "b", Score: (1/62.0 + 1/61.0) * 61 / 2, VectorScore: 0.8, VectorRank: 2, KeywordScore: 0.6, KeywordRank: 1},
		{ID: "a", Score: 0.5, VectorScore: 0.9, VectorRank: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Fuse()=%+v, want %+v", got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || !near(g.Score, w.Score) || g.VectorScore != w.VectorScore || g.VectorRank != w.VectorRank ||
			g.KeywordScore != w.KeywordScore || g.KeywordRank != w.KeywordRank {
			t.Fatalf("Fuse()[%d]=%+v, want %+v", i, g, w)
		}
	}
}

func BenchmarkFuse200(b *testing.B) { benchmarkFuse(b, 200) }
func BenchmarkFuse800(b *testing.B) { benchmarkFuse(b, 800) }

func benchmarkFuse(b *testing.B, n int) {
	vec, kw := make([]store.Candidate, n), make([]store.Candidate, n)
	for i := range n {
		vec[i] = store.Candidate{ID: string(rune('a'+i%26)) + string(rune(i)), Score: 1 / float64(i+1), Rank: i + 1}
		kw[i] = store.Candidate{ID: string(rune('a'+(i*7)%26)) + string(rune(n-i)), Score: 1 / float64(i+1), Rank: i + 1}
	}
	b.ReportAllocs()
	for b.Loop() {
		Fuse(memindex.FusionRRF, vec, kw, FuseParams{})
	}
}

func TestFuseRRFLegWeights(t *testing.T) {
	vec := []store.Candidate{{ID: "v", Score: 0.9, Rank: 1}, {ID: "k", Score: 0.5, Rank: 2}}
	kw := []store.Candidate{{ID: "k", Score: 0.8, Rank: 1}, {ID: "v", Score: 0.1, Rank: 2}}
	tests := []struct {
		name     string
		vw, kw   float64
		wantTop  string
		wantBest float64
	}{
		{"plain RRF ties on rank, ID breaks it", 0, 0, "k", (1.0/61 + 1.0/62) / (2.0 / 61)},
		{"keyword trusted more", 0.25, 1, "k", (1.0/61 + 0.25/62) / (1.25 / 61)},
		{"vector trusted more", 1, 0.25, "v", (1.0/61 + 0.25/62) / (1.25 / 61)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Fuse(memindex.FusionRRF, vec, kw, FuseParams{RRFVectorWeight: tt.vw, RRFKeywordWeight: tt.kw})
			if got[0].ID != tt.wantTop || math.Abs(got[0].Score-tt.wantBest) > 1e-12 {
				t.Fatalf("Fuse()[0]=%s %.6f, want %s %.6f", got[0].ID, got[0].Score, tt.wantTop, tt.wantBest)
			}
		})
	}
}

// A zero weight is the default 1, never "leave the leg out": a config that
// sets only the vector weight keeps the keyword leg.
func TestFuseOneWeightSet(t *testing.T) {
	kw := []store.Candidate{{ID: "k", Score: 0.000002}}
	got := Fuse(memindex.FusionRRF, nil, kw, FuseParams{RRFVectorWeight: 0.3})
	if len(got) != 1 || got[0].ID != "k" || got[0].Score <= 0 {
		t.Fatalf("Fuse with only the vector weight set = %+v, want the keyword candidate with a positive score", got)
	}
	both := Fuse(memindex.FusionRRF, []store.Candidate{{ID: "v", Score: 0.9}}, kw, FuseParams{RRFVectorWeight: 0.3})
	if len(both) != 2 || both[0].ID != "k" {
		t.Fatalf("Fuse with vector weight 0.3 = %+v, want the keyword candidate first (weight 1 beats 0.3 at the same rank)", both)
	}
}
