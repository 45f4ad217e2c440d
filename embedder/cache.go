package embedder

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"sync/atomic"
)

// Cache stores vectors by CacheKey. The store package's embedding cache table
// and MemoryCache satisfy it.
//
// GetMany returns the vectors it holds for keys, omitting the ones it lacks;
// PutMany stores entries. Vectors cross the interface by value: an
// implementation copies what it keeps (the caller may modify a vector after
// PutMany returns) and returns vectors the caller may modify.
type Cache interface {
	GetMany(ctx context.Context, keys []string) (map[string][]float32, error)
	PutMany(ctx context.Context, entries map[string][]float32) error
}

// CacheKey is the cache key of text embedded for kind in info's vector space:
// the hex SHA-256 of a version tag and provider, base URL, model, dims, kind
// and text, each length-prefixed so no two inputs share an encoding.
func CacheKey(info Info, kind Kind, text string) string {
	var stack [1024]byte
	msg := stack[:0] // grows to the heap only for long texts
	var n [binary.MaxVarintLen64]byte
	field := func(s string) {
		msg = append(msg, n[:binary.PutUvarint(n[:], uint64(len(s)))]...)
		msg = append(msg, s...)
	}
	field(cacheKeyVersion)
	field(info.Provider)
	field(info.BaseURL)
	field(info.Model)
	field(strconv.Itoa(info.Dims))
	field(string(kind))
	field(text)
	sum := sha256.Sum256(msg)
	return hex.EncodeToString(sum[:])
}

// cacheKeyVersion starts every key's input; change it to invalidate every
// cached vector at once.
const cacheKeyVersion = "memindex-embed-v1"

// CacheStats counts a Cached embedder's lookups since it was created.
type CacheStats struct {
	// Hits and Misses count distinct texts per request found and not found.
	Hits, Misses uint64
	// Errors counts failed cache reads and writes, and cached vectors of the
	// wrong length; each degraded to misses or to not caching.
	Errors uint64
}

// Cached is an Embedder that looks texts up in a Cache first and sends only
// the misses to its inner embedder, in one call, then stores their vectors.
// Wrap the batching embedder, not the other way round, so that only misses
// are batched: NewCached(NewBatched(provider, cfg), cache).
//
// A Cached over the built-in embedder (Info().Provider "builtin", also
// behind Batched) does not use its cache: the built-in embedder is
// deterministic, in process, and embeds a text in ~10 µs, less than the key,
// the lookup and the write of the store's SQLite cache cost (~23 µs a text
// on ingest, where nearly every text is new); Stats counts each distinct
// text of a request a miss: the cache answered none of them.
//
// The cache never fails a request: a read error counts in Stats and makes
// every text a miss, a write error counts and is otherwise ignored. Vectors
// from the inner embedder are checked with CheckVectors before they are
// stored, so a misbehaving provider cannot poison the cache.
type Cached struct {
	inner Embedder
	cache Cache

	hits, misses, errors atomic.Uint64
}

var _ Embedder = (*Cached)(nil)

// NewCached wraps inner with cache.
func NewCached(inner Embedder, cache Cache) *Cached {
	return &Cached{inner: inner, cache: cache}
}

// Info returns the inner embedder's Info.
func (c *Cached) Info() Info { return c.inner.Info() }

// Stats returns the counters so far.
func (c *Cached) Stats() CacheStats {
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Errors: c.errors.Load()}
}

// Embed returns the vectors of req.Texts in order. Identical texts are looked
// up and embedded once; each returned vector is its own copy. It fails only
// when the inner embedder fails or returns unusable vectors (ErrBadVector).
func (c *Cached) Embed(ctx context.Context, req Request) ([][]float32, error) {
	if len(req.Texts) == 0 {
		return [][]float32{}, nil
	}
	info := c.inner.Info()
	if info.Provider == builtinProvider { // cheaper than the cache (see Cached)
		c.misses.Add(uint64(distinct(req.Texts)))
		return c.inner.Embed(ctx, req)
	}

	// Distinct texts, their keys, and for each text its distinct index.
	index := make(map[string]int, len(req.Texts))
	at := make([]int, len(req.Texts))
	var uniq, keys []string
	for i, t := range req.Texts {
		u, ok := index[t]
		if !ok {
			u = len(uniq)
			index[t] = u
			uniq = append(uniq, t)
			keys = append(keys, CacheKey(info, req.Kind, t))
		}
		at[i] = u
	}

	found, err := c.cache.GetMany(ctx, keys)
	if err != nil {
		c.errors.Add(1)
		found = nil
	}
	vecs := make([][]float32, len(uniq))
	var missTexts []string
	var missAt []int
	for u, k := range keys {
		v, ok := found[k]
		if ok && (info.Dims <= 0 || len(v) == info.Dims) && len(v) > 0 {
			vecs[u] = v
			continue
		}
		if ok {
			c.errors.Add(1) // a stale or corrupt entry: embed again and overwrite
		}
		missTexts = append(missTexts, uniq[u])
		missAt = append(missAt, u)
	}
	c.hits.Add(uint64(len(uniq) - len(missAt)))
	c.misses.Add(uint64(len(missAt)))

	if len(missAt) > 0 {
		got, err := c.inner.Embed(ctx, Request{Texts: missTexts, Kind: req.Kind})
		if err != nil {
			return nil, err
		}
		if err := CheckVectors(got, len(missTexts), info.Dims); err != nil {
			return nil, err
		}
		entries := make(map[string][]float32, len(got))
		for j, u := range missAt {
			vecs[u] = got[j]
			entries[keys[u]] = got[j]
		}
		if err := c.cache.PutMany(ctx, entries); err != nil {
			c.errors.Add(1)
		}
	}

	out := make([][]float32, len(req.Texts))
	used := make([]bool, len(uniq))
	for i, u := range at {
		if used[u] {
			out[i] = append([]float32(nil), vecs[u]...)
			continue
		}
		used[u] = true
		out[i] = vecs[u]
	}
	return out, nil
}

// distinct returns the number of distinct texts.
func distinct(texts []string) int {
	if len(texts) < 2 {
		return len(texts)
	}
	seen := make(map[string]struct{}, len(texts))
	for _, t := range texts {
		seen[t] = struct{}{}
	}
	return len(seen)
}
