package embedder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// failingCache fails its reads or writes on demand and otherwise delegates.
type failingCache struct {
	Cache
	getErr, putErr error
}

func (c failingCache) GetMany(ctx context.Context, keys []string) (map[string][]float32, error) {
	if c.getErr != nil {
		return nil, c.getErr
	}
	return c.Cache.GetMany(ctx, keys)
}

func (c failingCache) PutMany(ctx context.Context, entries map[string][]float32) error {
	if c.putErr != nil {
		return c.putErr
	}
	return c.Cache.PutMany(ctx, entries)
}

func TestCacheKey(t *testing.T) {
	base := Info{Provider: "openai", Model: "text-embedding-3-small", Dims: 1536, BaseURL: "https://api.openai.com/v1"}
	// The key is persisted by the store: it must never change for the same
	// input. Computed independently as sha256 of uvarint-length-prefixed fields.
	const pinned = "964ecb3daffd94e1e53d3a8fa55c87dcfe3cda2b4e0d839c5d73fe86db47d58e"
	if got := CacheKey(base, KindDocument, "hello"); got != pinned {
		t.Errorf("CacheKey(base, document, hello)=%s, want %s", got, pinned)
	}
	tests := []struct {
		name string
		info Info
		kind Kind
		text string
	}{
		{"other provider", Info{Provider: "gemini", Model: base.Model, Dims: base.Dims, BaseURL: base.BaseURL}, KindDocument, "hello"},
		{"other model", Info{Provider: base.Provider, Model: "text-embedding-3-large", Dims: base.Dims, BaseURL: base.BaseURL}, KindDocument, "hello"},
		{"other dims", Info{Provider: base.Provider, Model: base.Model, Dims: 512, BaseURL: base.BaseURL}, KindDocument, "hello"},
		{"other base URL", Info{Provider: base.Provider, Model: base.Model, Dims: base.Dims, BaseURL: "http://localhost:8080"}, KindDocument, "hello"},
		{"other kind", base, KindQuery, "hello"},
		{"other text", base, KindDocument, "hello!"},
		{"empty kind", base, "", "hello"},
		{"field boundary moved", Info{Provider: "openaitext-embedding-3-small", Dims: base.Dims, BaseURL: base.BaseURL}, KindDocument, "hello"},
		{"text boundary moved", base, "documenthello", ""},
	}
	seen := map[string]string{pinned: "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CacheKey(tt.info, tt.kind, tt.text)
			if len(got) != 64 {
				t.Fatalf("CacheKey()=%q, want 64 hex digits", got)
			}
			if other, dup := seen[got]; dup {
				t.Fatalf("CacheKey()=%s, the same as for %q", got, other)
			}
			seen[got] = tt.name
			if again := CacheKey(tt.info, tt.kind, tt.text); again != got {
				t.Fatalf("CacheKey() not stable: %s then %s", got, again)
			}
		})
	}
}

func TestCachedHitsAndMisses(t *testing.T) {
	inner := &indexEmbedder{}
	c := NewCached(inner, NewMemoryCache(1<<20))
	steps := []struct {
		name      string
		texts     []string
		wantInner []string // texts the inner embedder must get; nil for no call
		want      CacheStats
	}{
		{"cold, with a duplicate", []string{"1", "2", "1"}, []string{"1", "2"}, CacheStats{Misses: 2}},
		{"one hit, one miss", []string{"1", "3"}, []string{"3"}, CacheStats{Hits: 1, Misses: 3}},
		{"all hits, duplicated", []string{"3", "2", "1", "2"}, nil, CacheStats{Hits: 4, Misses: 3}},
		{"empty request", nil, nil, CacheStats{Hits: 4, Misses: 3}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			before := len(inner.Calls())
			vecs, err := c.Embed(context.Background(), Request{Texts: s.texts, Kind: KindDocument})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if len(vecs) != len(s.texts) {
				t.Fatalf("Embed returned %d vectors, want %d", len(vecs), len(s.texts))
			}
			for i, v := range vecs {
				if fmt.Sprint(int(v[0])) != s.texts[i] {
					t.Fatalf("vector %d belongs to text %v, want %s", i, v[0], s.texts[i])
				}
			}
			calls := inner.Calls()[before:]
			switch {
			case s.wantInner == nil && len(calls) != 0:
				t.Fatalf("inner got %v, want no call", calls)
			case s.wantInner != nil && (len(calls) != 1 || !slices.Equal(calls[0], s.wantInner)):
				t.Fatalf("inner got %v, want one call with %v", calls, s.wantInner)
			}
			if got := c.Stats(); got != s.want {
				t.Fatalf("Stats()=%+v, want %+v", got, s.want)
			}
		})
	}
}

func TestCachedKindSeparates(t *testing.T) {
	inner := &indexEmbedder{}
	c := NewCached(inner, NewMemoryCache(1<<20))
	for _, kind := range []Kind{KindDocument, KindQuery, KindDocument} {
		if _, err := c.Embed(context.Background(), Request{Texts: []string{"7"}, Kind: kind}); err != nil {
			t.Fatalf("Embed(%s): %v", kind, err)
		}
	}
	if got, want := c.Stats(), (CacheStats{Hits: 1, Misses: 2}); got != want {
		t.Fatalf("Stats()=%+v, want %+v", got, want)
	}
}

func TestCachedVectorsAreIndependent(t *testing.T) {
	c := NewCached(&indexEmbedder{}, NewMemoryCache(1<<20))
	vecs, err := c.Embed(context.Background(), Request{Texts: []string{"5", "5"}})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	vecs[0][0] = 99 // a caller that normalises or scales in place
	if vecs[1][0] != 5 {
		t.Fatalf("duplicate vector changed with the first: got %v, want 5", vecs[1][0])
	}
	again, err := c.Embed(context.Background(), Request{Texts: []string{"5"}})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if again[0][0] != 5 {
		t.Fatalf("cached vector changed by the caller: got %v, want 5", again[0][0])
	}
}

func TestCachedDegrades(t *testing.T) {
	errCache := errors.New("cache unavailable")
	tests := []struct {
		name       string
		getErr     error
		putErr     error
		wantErrors uint64
		wantHits   uint64 // on the second request
	}{
		{"read fails", errCache, nil, 2, 0},
		{"write fails", nil, errCache, 2, 0},
		{"both fail", errCache, errCache, 4, 0},
		{"healthy", nil, nil, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := &indexEmbedder{}
			cache := failingCache{Cache: NewMemoryCache(1 << 20), getErr: tt.getErr, putErr: tt.putErr}
			c := NewCached(inner, cache)
			for range 2 {
				vecs, err := c.Embed(context.Background(), Request{Texts: []string{"1", "2"}})
				if err != nil {
					t.Fatalf("Embed()=%v, want the cache failure absorbed", err)
				}
				if vecs[0][0] != 1 || vecs[1][0] != 2 {
					t.Fatalf("Embed()=%v, want vectors of 1 and 2", vecs)
				}
			}
			st := c.Stats()
			if st.Errors != tt.wantErrors || st.Hits != tt.wantHits {
				t.Fatalf("Stats()=%+v, want Errors=%d Hits=%d", st, tt.wantErrors, tt.wantHits)
			}
		})
	}
}

func TestCachedRejectsBadVectors(t *testing.T) {
	errProvider := errors.New("provider down")
	tests := []struct {
		name string
		vecs [][]float32
		err  error
		want error
	}{
		{"provider error", nil, errProvider, errProvider},
		{"too few", [][]float32{{1, 0}}, nil, ErrBadVector},
		{"wrong dims", [][]float32{{1, 0, 0}, {1, 0, 0}}, nil, ErrBadVector},
		{"zero vector", [][]float32{{1, 0}, {0, 0}}, nil, ErrBadVector},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := Func{Desc: Info{Provider: "test", Dims: 2}, EmbedFunc: func(context.Context, Request) ([][]float32, error) {
				return tt.vecs, tt.err
			}}
			cache := NewMemoryCache(1 << 20)
			_, err := NewCached(inner, cache).Embed(context.Background(), Request{Texts: []string{"a", "b"}})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Embed()=%v, want %v", err, tt.want)
			}
			if cache.Len() != 0 {
				t.Fatalf("cache holds %d entries after a failure, want 0", cache.Len())
			}
		})
	}
}

func TestCachedStaleEntry(t *testing.T) {
	inner := &indexEmbedder{}
	cache := NewMemoryCache(1 << 20)
	key := CacheKey(inner.Info(), KindDocument, "4")
	if err := cache.PutMany(context.Background(), map[string][]float32{key: {1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	c := NewCached(inner, cache)
	vecs, err := c.Embed(context.Background(), Request{Texts: []string{"4"}, Kind: KindDocument})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(vecs[0]) != 2 || vecs[0][0] != 4 {
		t.Fatalf("Embed()=%v, want the inner vector [4 1]", vecs[0])
	}
	if got, want := c.Stats(), (CacheStats{Misses: 1, Errors: 1}); got != want {
		t.Fatalf("Stats()=%+v, want %+v", got, want)
	}
}

func BenchmarkCached(b *testing.B) {
	builtin := newTestBuiltin(b, 0)
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("hit/texts=%d", n), func(b *testing.B) {
			texts := make([]string, n)
			for i := range texts {
				texts[i] = benchTextSeed(400, uint64(i))
			}
			c := NewCached(builtin, NewMemoryCache(64<<20))
			embedAll(b, c, texts...) // warm
			benchmarkEmbed(b, c, texts)
			if st := c.Stats(); st.Misses != uint64(n) {
				b.Fatalf("Stats()=%+v, want only the %d warm-up misses", st, n)
			}
		})
	}
}

// countingCache counts the keys it is asked for and given.
type countingCache struct {
	Cache
	gets, puts int
}

func (c *countingCache) GetMany(ctx context.Context, keys []string) (map[string][]float32, error) {
	c.gets += len(keys)
	return c.Cache.GetMany(ctx, keys)
}

func (c *countingCache) PutMany(ctx context.Context, entries map[string][]float32) error {
	c.puts += len(entries)
	return c.Cache.PutMany(ctx, entries)
}

// TestCachedPassesTheBuiltinEmbedderThrough: over the built-in embedder
// (also behind Batched) Cached neither reads nor writes its cache, returns
// the built-in embedder's vectors, each its own copy, and counts each
// distinct text a miss; over any other provider it uses the cache.
func TestCachedPassesTheBuiltinEmbedderThrough(t *testing.T) {
	b, err := NewBuiltin(BuiltinConfig{Dims: 32})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"the weather in Berlin", "a second text", "the weather in Berlin"}
	want, err := b.Embed(context.Background(), Request{Texts: texts, Kind: KindDocument})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		inner    Embedder
		wantUses bool
	}{
		{"builtin", b, false},
		{"builtin behind Batched", NewBatched(b, PoolConfig{BatchSize: 2, Concurrency: 2}), false},
		{"another provider", &indexEmbedder{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := &countingCache{Cache: NewMemoryCache(1 << 20)}
			c := NewCached(tc.inner, cache)
			got, err := c.Embed(context.Background(), Request{Texts: texts, Kind: KindDocument})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if uses := cache.gets+cache.puts > 0; uses != tc.wantUses {
				t.Fatalf("cache got %d keys and %d entries, want use %v", cache.gets, cache.puts, tc.wantUses)
			}
			if tc.wantUses {
				return
			}
			if len(got) != len(want) {
				t.Fatalf("Embed returned %d vectors, want %d", len(got), len(want))
			}
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("vector %d differs from the built-in embedder's", i)
				}
			}
			got[0][0]++
			if got[2][0] == got[0][0] {
				t.Fatalf("the vectors of a repeated text share memory")
			}
			if st, want := c.Stats(), (CacheStats{Misses: 2}); st != want {
				t.Fatalf("Stats()=%+v, want %+v (each distinct text a miss)", st, want)
			}
		})
	}
}
