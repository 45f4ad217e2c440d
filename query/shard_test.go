package query

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"memindex/embedder"
	"memindex/store"
)

// memShard is a plain in-memory Searcher over a slice of chunks: a naive
// term-overlap keyword search and a cosine vector search, both confined to
// the namespace asked (unless leaky is set, to play a buggy shard).
type memShard struct {
	chunks  []memChunk
	applied uint64

	kwErr, vecErr error
	// kwPartial is returned with the keyword results, as a shard that ranked
	// only part of the matches does.
	kwPartial error
	// leaky makes searches and Chunks ignore the namespace: a misbehaving shard.
	leaky bool
	// panics makes KeywordSearch panic: a shard with a bug.
	panics bool
	// block, when set, makes KeywordSearch signal entered and wait for it to
	// close (or ctx to end).
	block   chan struct{}
	entered chan struct{}
	// barrier, when set, makes each leg wait until both legs have started.
	barrier *barrier

	mu        sync.Mutex
	gotFilter store.Filter
	gotLimit  int
	finished  int
}

type memChunk struct {
	rec store.ChunkRecord
	vec []float32
}

var _ Searcher = (*memShard)(nil)

func (m *memShard) visible(ns string, f store.Filter, c memChunk) bool {
	r := c.rec
	switch {
	case r.Namespace != ns && !m.leaky:
		return false
	case f.SessionKey != "" && r.SessionKey != f.SessionKey:
		return false
	case f.SessionID != "" && r.SessionID != f.SessionID:
		return false
	case !f.After.IsZero() && r.TimeEnd.Before(f.After):
		return false
	case !f.Before.IsZero() && !r.TimeStart.Before(f.Before):
		return false
	}
	return true
}

func (m *memShard) record(f store.Filter, limit int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gotFilter, m.gotLimit = f, limit
}

func (m *memShard) KeywordSearch(ctx context.Context, ns, text string, f store.Filter, limit int) ([]store.Candidate, error) {
	m.record(f, limit)
	if err := m.barrier.wait(ctx); err != nil {
		return nil, err
	}
	if m.block != nil {
		m.entered <- struct{}{}
		select {
		case <-m.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { m.mu.Lock(); m.finished++; m.mu.Unlock() }()
	}
	if m.panics {
		panic("keyword index corrupted")
	}
	if m.kwErr != nil {
		return nil, m.kwErr
	}
	terms := strings.Fields(strings.ToLower(text))
	var out []store.Candidate
	for _, c := range m.chunks {
		if !m.visible(ns, f, c) {
			continue
		}
		words := strings.Fields(strings.ToLower(c.rec.Text))
		snippet, n := make([]string, len(words)), 0
		copy(snippet, strings.Fields(c.rec.Text))
		for _, t := range terms {
			if i := slices.Index(words, t); i >= 0 {
				n++
				snippet[i] = "[" + snippet[i] + "]"
			}
		}
		if n > 0 {
			out = append(out, store.Candidate{ID: c.rec.ID, Score: float64(n) / float64(len(terms)), Snippet: strings.Join(snippet, " ")})
		}
	}
	return ranked(out, limit), m.kwPartial
}

func (m *memShard) VectorSearch(ctx context.Context, ns string, vec []float32, f store.Filter, limit int) ([]store.Candidate, error) {
	m.record(f, limit)
	if err := m.barrier.wait(ctx); err != nil {
		return nil, err
	}
	if m.vecErr != nil {
		return nil, m.vecErr
	}
	var out []store.Candidate
	for _, c := range m.chunks {
		if !m.visible(ns, f, c) || c.vec == nil {
			continue
		}
		var dot float64
		for i := range vec {
			dot += float64(vec[i]) * float64(c.vec[i])
		}
		out = append(out, store.Candidate{ID: c.rec.ID, Score: math.Round((dot+1)/2*1e6) / 1e6})
	}
	return ranked(out, limit), nil
}

func ranked(c []store.Candidate, limit int) []store.Candidate {
	slices.SortFunc(c, func(a, b store.Candidate) int {
		if x := cmp.Compare(b.Score, a.Score); x != 0 {
			return x
		}
		return cmp.Compare(a.ID, b.ID)
	})
	c = c[:min(limit, len(c))]
	for i := range c {
		c[i].Rank = i + 1
	}
	return c
}

func (m *memShard) Chunks(ctx context.Context, refs []store.ChunkRef) (map[string]store.ChunkRecord, error) {
	out := map[string]store.ChunkRecord{}
	for _, c := range m.chunks {
		if slices.ContainsFunc(refs, func(r store.ChunkRef) bool { return r.ID == c.rec.ID }) {
			out[c.rec.ID] = c.rec
		}
	}
	return out, nil
}

func (m *memShard) AppliedSeq(ctx context.Context) (uint64, error) { return m.applied, nil }

// barrier lets n legs through only when all n have arrived, so a test can
// prove they run concurrently: run one after the other, they time out.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, arrived: make(chan struct{})} }

func (b *barrier) wait(ctx context.Context) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	b.n--
	if b.n == 0 {
		close(b.arrived)
	}
	b.mu.Unlock()
	select {
	case <-b.arrived:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(5 * time.Second):
		return context.DeadlineExceeded
	}
}

var (
	t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	t1 = time.Date(2026, 11, 30, 9, 12, 0, 0, time.UTC)
)

// testChunks is the corpus of the engine and service tests. For the query
// "Ana moving Lisbon" (embedded as {1,0,0}) the keyword leg ranks c1 (1.0),
// c2 (1/3), c3 (1/3) and the vector leg c1 (1.0), c2 (0.9), c3 (0.5), c4 (0.5).
// x1 belongs to another namespace and matches best of all.
func testChunks() []memChunk {
	rec := func(id, ns, text string) store.ChunkRecord {
		return store.ChunkRecord{ID: id, Namespace: ns, Source: "sessions", SessionKey: "whatsapp:+4912345", SessionID: "2026-11-30",
			SeqStart: 1, SeqEnd: 3, MessageIDs: []string{"m-1", "m-2", "m-3"}, Text: text, TimeStart: t0, TimeEnd: t1}
	}
	return []memChunk{
		{rec("c1", "agent-7", "Ana is moving to Lisbon in spring"), []float32{1, 0, 0}},
		{rec("c2", "agent-7", "Ana likes coffee"), []float32{0.8, 0.6, 0}},
		{rec("c3", "agent-7", "The move to Lisbon was planned by Ben"), []float32{0, 1, 0}},
		{rec("c4", "agent-7", "weather is cold"), []float32{0, 0, 1}},
		{rec("x1", "other", "Ana moving Lisbon secret"), []float32{1, 0, 0}},
	}
}

// testEmbedder embeds every query as {1,0,0} and counts its calls.
func testEmbedder(calls *int, mu *sync.Mutex) embedder.Embedder {
	return embedder.Func{
		EmbedFunc: func(ctx context.Context, req embedder.Request) ([][]float32, error) {
			if calls != nil {
				mu.Lock()
				*calls++
				mu.Unlock()
			}
			if req.Kind != embedder.KindQuery || len(req.Texts) != 1 {
				return nil, fmt.Errorf("unexpected embed request %+v", req)
			}
			return [][]float32{{1, 0, 0}}, nil
		},
		Desc: embedder.Info{Provider: "test", Model: "fixed", Dims: 3},
	}
}

// routeTo routes namespace agent-7 to s in partition 3 and every other
// namespace to ErrNotOwned.
func routeTo(s Searcher) Router {
	return RouterFunc(func(ns string) (Searcher, int, error) {
		if ns == "agent-7" {
			return s, 3, nil
		}
		return nil, 0, ErrNotOwned
	})
}

func newTestShard() *memShard { return &memShard{chunks: testChunks(), applied: 42} }

func ids(hits []Fused) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func nearAll(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i], b[i]) {
			return false
		}
	}
	return true
}

func mustTB(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
