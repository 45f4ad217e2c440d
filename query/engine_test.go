package query

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"memindex"
	"memindex/embedder"
	"memindex/store"
)

func hitIDs(hits []memindex.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func hitScores(hits []memindex.Hit) []float64 {
	out := make([]float64, len(hits))
	for i, h := range hits {
		out[i] = h.Score
	}
	return out
}

func TestEngineSearch(t *testing.T) {
	const q = "Ana moving Lisbon"
	tests := []struct {
		name       string
		req        memindex.SearchRequest
		wantIDs    []string
		wantScores []float64
		wantEmbeds int
	}{
		{
			name:       "keyword mode scores by the leg alone",
			req:        memindex.SearchRequest{Query: q, Mode: memindex.ModeKeyword},
			wantIDs:    []string{"c1", "c2", "c3"},
			wantScores: []float64{1, 1 / 3.0, 1 / 3.0},
		},
		{
			name:       "vector mode scores by the leg alone",
			req:        memindex.SearchRequest{Query: q, Mode: memindex.ModeVector},
			wantIDs:    []string{"c1", "c2", "c3", "c4"},
			wantScores: []float64{1, 0.9, 0.5, 0.5},
			wantEmbeds: 1,
		},
		{
			name:       "hybrid rrf by default",
			req:        memindex.SearchRequest{Query: q},
			wantIDs:    []string{"c1", "c2", "c3", "c4"},
			wantScores: []float64{1, 61 / 62.0, 61 / 63.0, 61 / 128.0},
			wantEmbeds: 1,
		},
		{
			name:       "hybrid weighted",
			req:        memindex.SearchRequest{Query: q, Fusion: memindex.FusionWeighted},
			wantIDs:    []string{"c1", "c2", "c3", "c4"},
			wantScores: []float64{1, 0.7*0.9 + 0.3/3, 0.7*0.5 + 0.3/3, 0.7 * 0.5},
			wantEmbeds: 1,
		},
		{
			name:       "minScore drops the weak",
			req:        memindex.SearchRequest{Query: q, MinScore: 0.5},
			wantIDs:    []string{"c1", "c2", "c3"},
			wantScores: []float64{1, 61 / 62.0, 61 / 63.0},
			wantEmbeds: 1,
		},
		{
			name:       "k keeps the best",
			req:        memindex.SearchRequest{Query: q, K: 2},
			wantIDs:    []string{"c1", "c2"},
			wantScores: []float64{1, 61 / 62.0},
			wantEmbeds: 1,
		},
		{
			name:       "sources excluding sessions find nothing",
			req:        memindex.SearchRequest{Query: q, Sources: []string{memindex.SourceFiles}},
			wantIDs:    []string{},
			wantScores: []float64{},
			wantEmbeds: 1,
		},
		{
			name:       "nothing matches",
			req:        memindex.SearchRequest{Query: "zebra", Mode: memindex.ModeKeyword},
			wantIDs:    []string{},
			wantScores: []float64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls int
			var mu sync.Mutex
			e := NewEngine(EngineConfig{}, routeTo(newTestShard()), testEmbedder(&calls, &mu))
			tt.req.Namespace = "agent-7"
			got, err := e.Search(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Search() error %v", err)
			}
			if !slices.Equal(hitIDs(got.Hits), tt.wantIDs) || !nearAll(hitScores(got.Hits), tt.wantScores) {
				t.Fatalf("Search()=%v %v, want %v %v", hitIDs(got.Hits), hitScores(got.Hits), tt.wantIDs, tt.wantScores)
			}
			if got.Hits == nil {
				t.Fatalf("Search().Hits=nil, want an empty slice")
			}
			if len(got.Degraded) != 0 {
				t.Fatalf("Search().Degraded=%q, want none", got.Degraded)
			}
			if calls != tt.wantEmbeds {
				t.Fatalf("embedder called %d times, want %d", calls, tt.wantEmbeds)
			}
			if got.Type != "search.result" || got.Version != 1 || got.Namespace != "agent-7" || got.Partition != 3 || got.AppliedSeq != 42 {
				t.Fatalf("Search() header=%q v%d ns %q partition %d seq %d, want search.result v1 agent-7 3 42",
					got.Type, got.Version, got.Namespace, got.Partition, got.AppliedSeq)
			}
			wantVec := tt.req.Mode != memindex.ModeKeyword
			wantKw := tt.req.Mode != memindex.ModeVector
			if got.Legs.Vector.Ran != wantVec || got.Legs.Vector.Answered != wantVec ||
				got.Legs.Keyword.Ran != wantKw || got.Legs.Keyword.Answered != wantKw {
				t.Fatalf("Search().Legs=%+v, want vector ran/answered %v, keyword %v", got.Legs, wantVec, wantKw)
			}
		})
	}
}

func TestEngineSearchEmptyHitsMarshalAsArray(t *testing.T) {
	e := NewEngine(EngineConfig{}, routeTo(newTestShard()), testEmbedder(nil, nil))
	resp, err := e.Search(context.Background(), memindex.SearchRequest{Namespace: "agent-7", Query: "zebra", Mode: memindex.ModeKeyword})
	mustTB(t, err)
	data, err := json.Marshal(resp)
	mustTB(t, err)
	if !strings.Contains(string(data), `"hits":[]`) {
		t.Fatalf("json.Marshal(Search())=%s, want \"hits\":[]", data)
	}
}

func TestEngineSearchHitFields(t *testing.T) {
	e := NewEngine(EngineConfig{}, routeTo(newTestShard()), testEmbedder(nil, nil))
	resp, err := e.Search(context.Background(), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana moving Lisbon", Explain: true})
	mustTB(t, err)
	if len(resp.Hits) != 4 {
		t.Fatalf("Search() hits=%v, want 4", hitIDs(resp.Hits))
	}
	got := resp.Hits[0]
	want := memindex.Hit{
		ID: "c1", Source: "sessions", Text: "Ana is moving to Lisbon in spring",
		Snippet: "[Ana] is [moving] to [Lisbon] in spring", Score: 1,
		SessionKey: "whatsapp:+4912345", SessionID: "2026-11-30", SeqStart: 1, SeqEnd: 3,
		MessageIDs: []string{"m-1", "m-2", "m-3"}, Timestamp: "2026-11-30T09:12:00Z",
		Scores: &memindex.HitScores{Vector: 1, VectorRank: 1, Keyword: 1, KeywordRank: 1, Fusion: memindex.FusionRRF},
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("Search().Hits[0]=%s, want %s", g, w)
	}
	// c4 is found by the vector leg only: snippet from text, no keyword rank.
	got = resp.Hits[3]
	if got.ID != "c4" || got.Snippet != "weather is cold" || *got.Scores != (memindex.HitScores{Vector: 0.5, VectorRank: 4, Fusion: memindex.FusionRRF}) {
		t.Fatalf("Search().Hits[3]=%+v scores %+v, want c4 with snippet of its text and vector rank 4 only", got, got.Scores)
	}

	resp, err = e.Search(context.Background(), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana", Mode: memindex.ModeKeyword, Explain: true})
	mustTB(t, err)
	if s := resp.Hits[0].Scores; s == nil || s.Fusion != "none" || s.KeywordRank != 1 || s.VectorRank != 0 {
		t.Fatalf("keyword-mode Search().Hits[0].Scores=%+v, want fusion none, keyword rank 1", s)
	}
	resp, err = e.Search(context.Background(), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana"})
	mustTB(t, err)
	if resp.Hits[0].Scores != nil {
		t.Fatalf("Search() without explain Scores=%+v, want nil", resp.Hits[0].Scores)
	}
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	mustTB(tb, err)
	return string(b)
}

func TestEngineSearchFilterAndLimit(t *testing.T) {
	tests := []struct {
		name       string
		req        memindex.SearchRequest
		wantFilter store.Filter
		wantLimit  int
	}{
		{
			name:       "no filter, k 10 fetches 40",
			req:        memindex.SearchRequest{Query: "Ana"},
			wantFilter: store.Filter{},
			wantLimit:  40,
		},
		{
			name: "every filter, small k fetches the minimum",
			req: memindex.SearchRequest{Query: "Ana", K: 2, SessionKey: "whatsapp:+4912345", SessionID: "2026-11-30",
				After: "2026-11-30T00:00:00Z", Before: "2026-12-01T00:00:00+01:00"},
			wantFilter: store.Filter{SessionKey: "whatsapp:+4912345", SessionID: "2026-11-30",
				After: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), Before: time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)},
			wantLimit: MinCandidates,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestShard()
			e := NewEngine(EngineConfig{}, routeTo(s), testEmbedder(nil, nil))
			tt.req.Namespace = "agent-7"
			_, err := e.Search(context.Background(), tt.req)
			mustTB(t, err)
			s.mu.Lock()
			defer s.mu.Unlock()
			got := s.gotFilter
			if got.SessionKey != tt.wantFilter.SessionKey || got.SessionID != tt.wantFilter.SessionID ||
				!got.After.Equal(tt.wantFilter.After) || !got.Before.Equal(tt.wantFilter.Before) || s.gotLimit != tt.wantLimit {
				t.Fatalf("Searcher got filter %+v limit %d, want %+v limit %d", got, s.gotLimit, tt.wantFilter, tt.wantLimit)
			}
		})
	}
}

func TestEngineSearchRunsLegsConcurrently(t *testing.T) {
	s := newTestShard()
	s.barrier = newBarrier(2) // each leg waits for the other to start
	e := NewEngine(EngineConfig{}, routeTo(s), testEmbedder(nil, nil))
	resp, err := e.Search(context.Background(), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana moving Lisbon"})
	mustTB(t, err)
	if !resp.Legs.Vector.Answered || !resp.Legs.Keyword.Answered {
		t.Fatalf("Search().Legs=%+v, want both answered (legs ran one after the other?)", resp.Legs)
	}
}

func TestEngineSearchDegraded(t *testing.T) {
	failing := embedder.Func{EmbedFunc: func(ctx context.Context, req embedder.Request) ([][]float32, error) {
		return nil, errors.New("provider said 500")
	}}
	blocking := embedder.Func{EmbedFunc: func(ctx context.Context, req embedder.Request) ([][]float32, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	tests := []struct {
		name         string
		emb          embedder.Embedder
		kwErr        error
		vecErr       error
		wantIDs      []string
		wantScores   []float64
		wantVector   memindex.Leg
		wantKeyword  memindex.Leg
		wantDegraded string
	}{
		{
			name:         "embedder errors",
			emb:          failing,
			wantIDs:      []string{"c1", "c2", "c3"},
			wantScores:   []float64{1, 61 / 62.0, 61 / 63.0},
			wantVector:   memindex.Leg{Ran: true, Reason: "query embedding failed: provider said 500"},
			wantKeyword:  memindex.Leg{Ran: true, Answered: true, Hits: 3},
			wantDegraded: "vector leg skipped: query embedding failed: provider said 500; results are keyword-only",
		},
		{
			name:         "embedder blocks past the timeout",
			emb:          blocking,
			wantIDs:      []string{"c1", "c2", "c3"},
			wantScores:   []float64{1, 61 / 62.0, 61 / 63.0},
			wantVector:   memindex.Leg{Ran: true, Reason: "query embedding timed out after 50ms"},
			wantKeyword:  memindex.Leg{Ran: true, Answered: true, Hits: 3},
			wantDegraded: "vector leg skipped: query embedding timed out after 50ms; results are keyword-only",
		},
		{
			name:         "no embedder",
			emb:          nil,
			wantIDs:      []string{"c1", "c2", "c3"},
			wantScores:   []float64{1, 61 / 62.0, 61 / 63.0},
			wantVector:   memindex.Leg{Ran: true, Reason: "no embedder configured"},
			wantKeyword:  memindex.Leg{Ran: true, Answered: true, Hits: 3},
			wantDegraded: "vector leg skipped: no embedder configured; results are keyword-only",
		},
		{
			name:         "vector search fails",
			emb:          testEmbedder(nil, nil),
			vecErr:       errors.New("vec0 is gone"),
			wantIDs:      []string{"c1", "c2", "c3"},
			wantScores:   []float64{1, 61 / 62.0, 61 / 63.0},
			wantVector:   memindex.Leg{Ran: true, Reason: "search failed: vec0 is gone"},
			wantKeyword:  memindex.Leg{Ran: true, Answered: true, Hits: 3},
			wantDegraded: "vector leg failed: search failed: vec0 is gone; results are keyword-only",
		},
		{
			name:         "keyword search fails",
			emb:          testEmbedder(nil, nil),
			kwErr:        errors.New("fts5: malformed MATCH"),
			wantIDs:      []string{"c1", "c2", "c3", "c4"},
			wantScores:   []float64{1, 61 / 62.0, 61 / 63.0, 61 / 64.0},
			wantVector:   memindex.Leg{Ran: true, Answered: true, Hits: 4},
			wantKeyword:  memindex.Leg{Ran: true, Reason: "search failed: fts5: malformed MATCH"},
			wantDegraded: "keyword leg failed: search failed: fts5: malformed MATCH; results are vector-only",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestShard()
			s.kwErr, s.vecErr = tt.kwErr, tt.vecErr
			e := NewEngine(EngineConfig{QueryEmbedTimeout: 50 * time.Millisecond}, routeTo(s), tt.emb)
			got, err := e.Search(context.Background(), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana moving Lisbon"})
			if err != nil {
				t.Fatalf("Search() error %v, want a degraded answer", err)
			}
			if !slices.Equal(hitIDs(got.Hits), tt.wantIDs) || !nearAll(hitScores(got.Hits), tt.wantScores) {
				t.Fatalf("Search()=%v %v, want %v %v", hitIDs(got.Hits), hitScores(got.Hits), tt.wantIDs, tt.wantScores)
			}
			if tt.name == "embedder blocks past the timeout" && got.Legs.Vector.TookMs < 50 {
				t.Fatalf("Search().Legs.Vector.TookMs=%v, want at least the 50ms it waited", got.Legs.Vector.TookMs)
			}
			got.Legs.Vector.TookMs, got.Legs.Keyword.TookMs = 0, 0
			if got.Legs.Vector != tt.wantVector || got.Legs.Keyword != tt.wantKeyword {
				t.Fatalf("Search().Legs=%+v, want vector %+v keyword %+v", got.Legs, tt.wantVector, tt.wantKeyword)
			}
			if !slices.Equal(got.Degraded, []string{tt.wantDegraded}) {
				t.Fatalf("Search().Degraded=%q, want %q", got.Degraded, tt.wantDegraded)
			}
		})
	}
}

func TestEngineSearchErrors(t *testing.T) {
	failing := embedder.Func{EmbedFunc: func(ctx context.Context, req embedder.Request) ([][]float32, error) {
		return nil, errors.New("provider down")
	}}
	tests := []struct {
		name    string
		req     memindex.SearchRequest
		emb     embedder.Embedder
		kwErr   error
		router  Router
		want    error
		wantMsg string
	}{
		{name: "blank query", req: memindex.SearchRequest{Namespace: "agent-7", Query: " "}, want: memindex.ErrInvalid, wantMsg: "field query"},
		{name: "bad namespace", req: memindex.SearchRequest{Namespace: "a.b", Query: "x"}, want: memindex.ErrInvalid, wantMsg: "field namespace"},
		{name: "k too big", req: memindex.SearchRequest{Namespace: "agent-7", Query: "x", K: 1000}, want: memindex.ErrInvalid, wantMsg: "field k"},
		{name: "query too large", req: memindex.SearchRequest{Namespace: "agent-7", Query: strings.Repeat("x", memindex.MaxQueryBytes+1)}, want: memindex.ErrTooLarge, wantMsg: "field query"},
		{name: "not owned", req: memindex.SearchRequest{Namespace: "elsewhere", Query: "x"}, want: ErrNotOwned, wantMsg: "elsewhere"},
		{
			name:   "not ready",
			req:    memindex.SearchRequest{Namespace: "agent-7", Query: "x"},
			router: RouterFunc(func(string) (Searcher, int, error) { return nil, 0, ErrNotReady }),
			want:   ErrNotReady, wantMsg: "not ready",
		},
		{
			name: "both legs fail", req: memindex.SearchRequest{Namespace: "agent-7", Query: "x"},
			emb: failing, kwErr: errors.New("disk I/O error"),
			want: ErrUnavailable, wantMsg: "vector leg: query embedding failed: provider down; keyword leg: search failed: disk I/O error",
		},
		{
			name: "the only leg fails", req: memindex.SearchRequest{Namespace: "agent-7", Query: "x", Mode: memindex.ModeVector},
			emb: failing, want: ErrUnavailable, wantMsg: "provider down",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestShard()
			s.kwErr = tt.kwErr
			r := tt.router
			if r == nil {
				r = routeTo(s)
			}
			emb := tt.emb
			if emb == nil {
				emb = testEmbedder(nil, nil)
			}
			_, err := NewEngine(EngineConfig{}, r, emb).Search(context.Background(), tt.req)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Search() error=%v, want %v containing %q", err, tt.want, tt.wantMsg)
			}
		})
	}
}

// TestEngineSearchNamespaceDefence plays a shard that ignores the namespace:
// the other namespace's chunk, the best match of all, must never come back.
func TestEngineSearchNamespaceDefence(t *testing.T) {
	for _, mode := range []string{memindex.ModeHybrid, memindex.ModeKeyword, memindex.ModeVector} {
		t.Run(mode, func(t *testing.T) {
			s := newTestShard()
			s.leaky = true
			e := NewEngine(EngineConfig{}, routeTo(s), testEmbedder(nil, nil))
			got, err := e.Search(context.Background(), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana moving Lisbon secret", Mode: mode})
			mustTB(t, err)
			if slices.Contains(hitIDs(got.Hits), "x1") || len(got.Hits) == 0 {
				t.Fatalf("Search()=%v, want agent-7 hits only", hitIDs(got.Hits))
			}
			for _, h := range got.Hits {
				if strings.Contains(h.Text, "secret") {
					t.Fatalf("Search() leaked %+v", h)
				}
			}
			if !slices.ContainsFunc(got.Degraded, func(s string) bool { return strings.Contains(s, "namespace check") }) {
				t.Fatalf("Search().Degraded=%q, want a note about the namespace check", got.Degraded)
			}
		})
	}
}

// TestEngineSearchRefillsAfterDrops: when hydration drops candidates, the
// next best fill the k slots.
func TestEngineSearchRefillsAfterDrops(t *testing.T) {
	s := newTestShard()
	s.leaky = true
	e := NewEngine(EngineConfig{}, routeTo(s), testEmbedder(nil, nil))
	got, err := e.Search(context.Background(), memindex.SearchRequest{Namespace: "agent-7", Query: "Ana moving Lisbon secret", K: 2, Mode: memindex.ModeVector})
	mustTB(t, err)
	if want := []string{"c1", "c2"}; !slices.Equal(hitIDs(got.Hits), want) {
		t.Fatalf("Search()=%v, want %v", hitIDs(got.Hits), want)
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short", "hello", 10, "hello"},
		{"exact", "hello", 5, "hello"},
		{"cut", "hello world", 5, "hello…"},
		{"cut trims space", "hello world", 6, "hello…"},
		{"multibyte", "héllo wörld", 7, "héllo w…"},
		{"emoji", "😀😀😀", 2, "😀😀…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cut(tt.in, tt.n); got != tt.want {
				t.Fatalf("cut(%q, %d)=%q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}

func TestEngineConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  EngineConfig
		ok   bool
	}{
		{"zero", EngineConfig{}, true},
		{"weights sum to 1", EngineConfig{VectorWeight: 0.5, KeywordWeight: 0.5}, true},
		{"weights do not sum to 1", EngineConfig{VectorWeight: 0.5, KeywordWeight: 0.2}, false},
		{"negative weight", EngineConfig{VectorWeight: 1.5, KeywordWeight: -0.5}, false},
		{"negative factor", EngineConfig{CandidateFactor: -1}, false},
		{"negative timeout", EngineConfig{QueryEmbedTimeout: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate()=%v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestEngineSearchKeywordPartialIsFlagged(t *testing.T) {
	sh := &memShard{
		chunks:    []memChunk{{rec: store.ChunkRecord{ID: "c1", Namespace: "ns", Text: "common words here"}}},
		kwPartial: &store.PartialError{Reason: "ranked only the newest chunks"},
	}
	e := NewEngine(EngineConfig{}, RouterFunc(func(string) (Searcher, int, error) { return sh, 0, nil }), nil)
	resp, err := e.Search(context.Background(), memindex.SearchRequest{Namespace: "ns", Query: "common", Mode: memindex.ModeKeyword})
	if err != nil {
		t.Fatalf("Search()=%v, want the partial results", err)
	}
	if len(resp.Hits) != 1 || !resp.Legs.Keyword.Answered || resp.Legs.Keyword.Reason != "ranked only the newest chunks" {
		t.Fatalf("Search() hits=%v keyword leg=%+v; want the hit, answered with the reason", resp.Hits, resp.Legs.Keyword)
	}
	if len(resp.Degraded) != 1 || !strings.Contains(resp.Degraded[0], "keyword leg answered in part: ranked only the newest") {
		t.Fatalf("Degraded=%q, want the partial keyword leg named", resp.Degraded)
	}
}

// coveredShard is a memShard that reports part of its chunks without vectors.
type coveredShard struct {
	*memShard
	vectors, chunks int64
}

func (c coveredShard) VectorCoverage(string) (int64, int64) { return c.vectors, c.chunks }

func TestEngineSearchFlagsMissingVectors(t *testing.T) {
	ms := &memShard{chunks: []memChunk{{rec: store.ChunkRecord{ID: "c1", Namespace: "ns", Text: "harbour notes"}, vec: []float32{1, 0}}}}
	emb := embedder.Func{EmbedFunc: func(ctx context.Context, req embedder.Request) ([][]float32, error) {
		return [][]float32{{1, 0}}, nil
	}, Desc: embedder.Info{Dims: 2}}
	for _, tt := range []struct {
		name     string
		sh       Searcher
		degraded bool
	}{
		{"all chunks have vectors", coveredShard{ms, 5, 5}, false},
		{"some wait for vectors", coveredShard{ms, 3, 5}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEngine(EngineConfig{}, RouterFunc(func(string) (Searcher, int, error) { return tt.sh, 0, nil }), emb)
			resp, err := e.Search(context.Background(), memindex.SearchRequest{Namespace: "ns", Query: "harbour"})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(strings.Join(resp.Degraded, "|"), "vector leg answered in part: covers 3 of 5 chunks")
			if got != tt.degraded {
				t.Fatalf("Degraded=%q, want the missing vectors flagged: %v", resp.Degraded, tt.degraded)
			}
		})
	}
}

// topShard is a memShard that also offers VectorSearchTop, recording the
// limit and exact head asked, and answering as VectorSearch does.
type topShard struct {
	*memShard
	mu           sync.Mutex
	limit, exact int
}

func (s *topShard) VectorSearchTop(ctx context.Context, ns string, vec []float32, f store.Filter, limit, exact int) ([]store.Candidate, error) {
	s.mu.Lock()
	s.limit, s.exact = limit, exact
	s.mu.Unlock()
	return s.VectorSearch(ctx, ns, vec, f, limit)
}

// TestVectorLegAsksExactOnlyForTheHits: against a shard that offers
// VectorSearchTop, the vector leg asks for its usual candidates (K times
// the candidate factor) exact only as deep as the answer can take hits in
// the vector leg's order: K, or mmrPool times K when MMR or decay chooses
// among more; its hits are those of VectorSearch.
func TestVectorLegAsksExactOnlyForTheHits(t *testing.T) {
	for _, tt := range []struct {
		name      string
		req       memindex.SearchRequest
		wantExact int
	}{
		{"hybrid", memindex.SearchRequest{Query: "deploy", K: 5}, 5},
		{"vector", memindex.SearchRequest{Query: "deploy", K: 7, Mode: memindex.ModeVector}, 7},
		{"mmr", memindex.SearchRequest{Query: "deploy", K: 5, MMR: true}, 5 * mmrPool},
		{"decay", memindex.SearchRequest{Query: "deploy", K: 4, HalfLifeHours: 24}, 4 * mmrPool},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := &topShard{memShard: newTestShard()}
			tt.req.Namespace = "agent-7"
			got, err := NewEngine(EngineConfig{}, routeTo(ts), testEmbedder(nil, nil)).Search(context.Background(), tt.req)
			mustTB(t, err)
			want, err := NewEngine(EngineConfig{}, routeTo(newTestShard()), testEmbedder(nil, nil)).Search(context.Background(), tt.req)
			mustTB(t, err)
			if wantLimit := max(tt.req.K*DefaultCandidateFactor, MinCandidates); ts.limit != wantLimit || ts.exact != tt.wantExact {
				t.Fatalf("VectorSearchTop asked limit %d, exact %d; want %d, %d", ts.limit, ts.exact, wantLimit, tt.wantExact)
			}
			if !slices.Equal(hitIDs(got.Hits), hitIDs(want.Hits)) {
				t.Fatalf("hits %v, want VectorSearch's %v", hitIDs(got.Hits), hitIDs(want.Hits))
			}
		})
	}
}
