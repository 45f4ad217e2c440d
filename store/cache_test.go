package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
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

	// A read more than an hour after the last use touches the entry.
	c.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if _, err := c.GetMany(ctx, []string{"model|2"}); err != nil {
		t.Fatal(err)
	}
	var used int64
	c.r.QueryRow(`SELECT last_used FROM embedding_cache WHERE key = 'model|2'`).Scan(&used)
	if time.Unix(0, used).Before(time.Now().Add(time.Hour)) {
		t.Errorf("last_used not touched: %v", time.Unix(0, used))
	}
}
