package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCacheRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cache.db")
	c, err := OpenCache(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(25, 26))
	entries := map[string][]float32{}
	for i := 0; i < 1200; i++ { // over one IN batch
		v := make([]float32, 5)
		for j := range v {
			v[j] = math.Float32frombits(r.Uint32()) // any bits, NaN payloads included
		}
		entries[fmt.Sprintf("model|%d", i)] = v
	}
	entries["empty"] = []float32{}
	if err := c.PutMany(ctx, entries); err != nil {
		t.Fatal(err)
	}
	keys := []string{"missing"}
	for k := range entries {
		keys = append(keys, k)
	}
	check := func(c *Cache) {
		got, err := c.GetMany(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(entries) {
			t.Fatalf("GetMany() = %d entries, want %d", len(got), len(entries))
		}
		for k, want := range entries {
			g := got[k]
			if len(g) != len(want) {
				t.Fatalf("%s: %d floats, want %d", k, len(g), len(want))
			}
			for i := range want {
				if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s[%d] = %08x, want %08x", k, i, math.Float32bits(g[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
	check(c)
	// Replace one, read through a reopened file.
	entries["model|1"] = []float32{1, 2, 3}
	if err := c.PutMany(ctx, map[string][]float32{"model|1": {1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetMany(ctx, keys); !errorsIs(err, ErrClosed) {
		t.Errorf("GetMany after Close: %v, want ErrClosed", err)
	}
	c, err = OpenCache(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	check(c)

}

// openTestCache opens a cache in t.TempDir with cfg and closes it at cleanup.
func openTestCache(tb testing.TB, cfg CacheConfig) *Cache {
	tb.Helper()
	c, err := OpenCacheWith(context.Background(), filepath.Join(tb.TempDir(), "cache.db"), cfg)
	if err != nil {
		tb.Fatalf("OpenCacheWith: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil && !isClosed(err) {
			tb.Errorf("Close: %v", err)
		}
	})
	return c
}

// vec24 is a 24-float vector: with a one-byte key an entry is 97 bytes.
func vec24(f float32) []float32 {
	v := make([]float32, 24)
	for i := range v {
		v[i] = f
	}
	return v
}

const entry97 = 1 + 4*24

func put(tb testing.TB, c *Cache, keys ...string) {
	tb.Helper()
	for _, k := range keys {
		if err := c.PutMany(context.Background(), map[string][]float32{k: vec24(float32(len(k)))}); err != nil {
			tb.Fatalf("PutMany(%s): %v", k, err)
		}
	}
}

// present returns which of keys the cache holds, sorted.
func present(tb testing.TB, c *Cache, keys ...string) []string {
	tb.Helper()
	var out []string
	for _, k := range keys {
		var n int
		if err := c.w.QueryRow(`SELECT COUNT(*) FROM embedding_cache WHERE key = ?`, k).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		if n == 1 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// checkTotals fails unless Stats agrees with the file and fits the bound.
func checkTotals(tb testing.TB, c *Cache) CacheStats {
	tb.Helper()
	st, err := c.Stats(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	var entries, bytes int64
	if err := c.w.QueryRow(`SELECT COUNT(*), COALESCE(SUM(octet_length(key) + length(vec)), 0) FROM embedding_cache`).
		Scan(&entries, &bytes); err != nil {
		tb.Fatal(err)
	}
	if st.Entries != entries || st.Bytes != bytes {
		tb.Fatalf("Stats() = %d entries, %d bytes; the file holds %d, %d", st.Entries, st.Bytes, entries, bytes)
	}
	if st.MaxBytes > 0 && st.Bytes > st.MaxBytes {
		tb.Fatalf("Stats().Bytes = %d, over MaxBytes %d", st.Bytes, st.MaxBytes)
	}
	return st
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	frozen := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name string
		now  func() time.Time
	}{
		{"wall clock", time.Now},
		// Every call at the same instant: recency still orders by call.
		{"frozen clock", func() time.Time { return frozen }},
		{"clock stepping back", func() time.Time { frozen = frozen.Add(-time.Second); return frozen }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := openTestCache(t, CacheConfig{MaxBytes: 3*entry97 + 59}) // three fit, four do not
			c.now = tc.now
			put(t, c, "A", "B", "C")
			if got, err := c.GetMany(ctx, []string{"A", "X"}); err != nil || len(got) != 1 {
				t.Fatalf("GetMany(A, X) = %d hits, %v; want 1, nil", len(got), err)
			}
			put(t, c, "D")
			if got, want := present(t, c, "A", "B", "C", "D"), []string{"A", "C", "D"}; !slices.Equal(got, want) {
				t.Fatalf("after put D the cache holds %v, want %v", got, want)
			}
			st := checkTotals(t, c)
			if want := (CacheStats{Entries: 3, Bytes: 3 * entry97, MaxBytes: 3*entry97 + 59, Evictions: 1}); st != want {
				t.Fatalf("Stats() = %+v, want %+v", st, want)
			}
			// C is now the least recently used; a replaced entry counts as used.
			put(t, c, "A", "E")
			if got, want := present(t, c, "A", "B", "C", "D", "E"), []string{"A", "D", "E"}; !slices.Equal(got, want) {
				t.Fatalf("after put A, E the cache holds %v, want %v", got, want)
			}
		})
	}
}

func TestCacheEvictsDownToLowWater(t *testing.T) {
	c := openTestCache(t, CacheConfig{MaxBytes: 10 * entry97})
	for i := range 10 {
		put(t, c, string(rune('a'+i)))
	}
	if st := checkTotals(t, c); st.Entries != 10 || st.Evictions != 0 {
		t.Fatalf("Stats() = %+v, want 10 entries and no eviction at exactly MaxBytes", st)
	}
	put(t, c, "k")
	// 11 entries are over; 90% of 10 entries' bytes holds 9: evict 2.
	if st := checkTotals(t, c); st.Entries != 9 || st.Evictions != 2 {
		t.Fatalf("Stats() = %+v, want 9 entries after 2 evictions", st)
	}
	if got, want := present(t, c, "a", "b", "c"), []string{"c"}; !slices.Equal(got, want) {
		t.Fatalf("the oldest left are %v, want %v", got, want)
	}
}

func TestCacheStaysUnderMaxBytes(t *testing.T) {
	ctx := context.Background()
	const maxBytes = 20_000
	c := openTestCache(t, CacheConfig{MaxBytes: maxBytes})
	r := rand.New(rand.NewPCG(7, 8))
	var puts int
	for range 200 {
		batch := map[string][]float32{}
		for range 1 + r.IntN(8) {
			batch[fmt.Sprintf("key-%d", r.IntN(400))] = make([]float32, 1+r.IntN(300))
			puts++
		}
		if err := c.PutMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if r.IntN(3) == 0 {
			if _, err := c.GetMany(ctx, []string{fmt.Sprintf("key-%d", r.IntN(400))}); err != nil {
				t.Fatal(err)
			}
		}
		checkTotals(t, c)
	}
	st := checkTotals(t, c)
	if st.Evictions == 0 || st.Bytes == 0 {
		t.Fatalf("Stats() = %+v after %d puts, want evictions and a non-empty cache", st, puts)
	}
}

func TestCacheOversizedEntryIsNotStored(t *testing.T) {
	ctx := context.Background()
	c := openTestCache(t, CacheConfig{MaxBytes: 2 * entry97})
	put(t, c, "A", "B")
	if err := c.PutMany(ctx, map[string][]float32{"A": make([]float32, 100)}); err != nil {
		t.Fatal(err)
	}
	if got, want := present(t, c, "A", "B"), []string{"B"}; !slices.Equal(got, want) {
		t.Fatalf("after an oversized put of A the cache holds %v, want %v", got, want)
	}
	if st := checkTotals(t, c); st.Entries != 1 || st.Evictions != 0 {
		t.Fatalf("Stats() = %+v, want B alone and no eviction", st)
	}
}

func TestCacheReopenRestoresTotals(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cache.db")
	c, err := OpenCache(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, "A", "B", "C", "D", "E", "F")
	if _, err := c.GetMany(ctx, []string{"B"}); err != nil { // written down by Close
		t.Fatal(err)
	}
	before := checkTotals(t, c)
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stats(ctx); !errorsIs(err, ErrClosed) {
		t.Fatalf("Stats after Close: %v, want ErrClosed", err)
	}

	c, err = OpenCache(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkTotals(t, c); got != before {
		t.Fatalf("reopened Stats() = %+v, want %+v", got, before)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// A lower bound evicts at open, least recently used first: B was read
	// after F was put.
	c, err = OpenCacheWith(ctx, path, CacheConfig{MaxBytes: 3 * entry97})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	st := checkTotals(t, c)
	if want := (CacheStats{Entries: 2, Bytes: 2 * entry97, MaxBytes: 3 * entry97, Evictions: 4}); st != want {
		t.Fatalf("Stats() = %+v, want %+v", st, want)
	}
	if got, want := present(t, c, "A", "B", "C", "D", "E", "F"), []string{"B", "F"}; !slices.Equal(got, want) {
		t.Fatalf("after reopening with a lower bound the cache holds %v, want %v", got, want)
	}
}

func TestCacheReadsWriteHitsDown(t *testing.T) {
	ctx := context.Background()
	c := openTestCache(t, CacheConfig{})
	put(t, c, "A", "B")
	lastUsed := func(k string) int64 {
		var n int64
		if err := c.r.QueryRow(`SELECT last_used FROM embedding_cache WHERE key = ?`, k).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	put0 := lastUsed("A")
	if _, err := c.GetMany(ctx, []string{"A"}); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed("A"); got != put0 {
		t.Fatalf("last_used(A) = %d right after a hit, want %d: one hit should not be a write", got, put0)
	}
	// A minute later the next hit writes every recorded hit down.
	c.now = func() time.Time { return time.Now().Add(2 * touchFlushEvery) }
	if _, err := c.GetMany(ctx, []string{"B"}); err != nil {
		t.Fatal(err)
	}
	if a, b := lastUsed("A"), lastUsed("B"); a <= put0 || b <= a {
		t.Fatalf("last_used(A, B) = %d, %d after the flush, want %d < A < B", a, b, put0)
	}
	if n := len(c.takeTouched()); n != 0 {
		t.Fatalf("%d hits still recorded after the flush", n)
	}
}

func TestCacheConfigValidate(t *testing.T) {
	if _, err := OpenCacheWith(context.Background(), filepath.Join(t.TempDir(), "c.db"), CacheConfig{MaxBytes: -1}); !errorsIs(err, ErrInvalidConfig) {
		t.Fatalf("OpenCacheWith(MaxBytes -1) = %v, want ErrInvalidConfig", err)
	}
}

func TestCacheConcurrentUse(t *testing.T) {
	ctx := context.Background()
	const maxBytes = 30 * entry97
	c := openTestCache(t, CacheConfig{MaxBytes: maxBytes})
	// A minute passes at every look at the clock, so reads write their hits
	// down whenever no put is in progress.
	var minutes atomic.Int64
	c.now = func() time.Time { return time.Unix(0, 0).Add(time.Duration(minutes.Add(1)) * time.Minute) }
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 150 {
				k := fmt.Sprintf("%c", 'A'+r.IntN(50))
				if g%2 == 0 {
					if err := c.PutMany(ctx, map[string][]float32{k: vec24(float32(i))}); err != nil {
						t.Errorf("PutMany: %v", err)
						return
					}
					continue
				}
				if _, err := c.GetMany(ctx, []string{k, "missing"}); err != nil {
					t.Errorf("GetMany: %v", err)
					return
				}
				if _, err := c.Stats(ctx); err != nil {
					t.Errorf("Stats: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	st := checkTotals(t, c)
	if st.Evictions == 0 {
		t.Fatalf("Stats() = %+v, want evictions", st)
	}
}
