package query

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"memindex"
)

// TestCacheKeyIgnoresKeyOrder: configurations decoded from JSON with
// their keys in another order share a key; another value does not.
func TestCacheKeyIgnoresKeyOrder(t *testing.T) {
	docs := []string{
		`{"backend":"qmd","qmd":{"command":"qmd","collections":["a","b"],"timeout":5},"fallback":{"backend":"local","local":{"path":"/d","keywordOnly":true}},"breaker":{"failures":2,"coolDown":9}}`,
		`{"breaker":{"coolDown":9,"failures":2},"fallback":{"local":{"keywordOnly":true,"path":"/d"},"backend":"local"},"qmd":{"timeout":5,"collections":["a","b"],"command":"qmd"},"backend":"qmd"}`,
	}
	var keys []string
	for _, d := range docs {
		var cfg Config
		mustTB(t, json.Unmarshal([]byte(d), &cfg))
		k, err := CacheKey(cfg)
		mustTB(t, err)
		keys = append(keys, k)
	}
	if keys[0] != keys[1] {
		t.Fatalf("CacheKey differs with key order: %s vs %s", keys[0], keys[1])
	}
	var other Config
	mustTB(t, json.Unmarshal([]byte(docs[0]), &other))
	other.Fallback.Local.Path = "/e"
	if k, _ := CacheKey(other); k == keys[0] {
		t.Fatal("CacheKey is the same for another fallback path")
	}
}

// TestCacheSharesAndEvicts: concurrent Opens of one configuration get one
// manager; a manager whose primary failed (the fallback answered) is
// evicted, and the next Open opens a new one.
func TestCacheSharesAndEvicts(t *testing.T) {
	ctx := context.Background()
	data := writeTestShards(t)
	c := NewCache()
	defer c.Close(ctx)

	good := Config{Backend: BackendLocal, Local: LocalConfig{Path: data}}
	var wg sync.WaitGroup
	ms := make([]Manager, 8)
	for i := range ms {
		wg.Go(func() {
			m, err := c.Open(ctx, good)
			if err != nil {
				t.Errorf("Open: %v", err)
				return
			}
			ms[i] = m
		})
	}
	wg.Wait()
	for i, m := range ms {
		if m == nil || m.(*cached).Manager != ms[0].(*cached).Manager {
			t.Fatalf("Open %d returned another manager than Open 0", i)
		}
	}
	if _, err := ms[0].Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon"}); err != nil {
		t.Fatalf("Search: %v", err)
	}
	for _, m := range ms {
		mustTB(t, m.Close(ctx))
	}
	if c.Len() != 1 {
		t.Fatalf("Len()=%d after a good manager was released, want 1 (kept cached)", c.Len())
	}

	// A remote primary whose server is not there: the local fallback answers.
	failing := Config{Backend: BackendRemote, Remote: RemoteConfig{URL: "nats://127.0.0.1:1"},
		Fallback: &Config{Backend: BackendLocal, Local: LocalConfig{Path: data}}}
	m1, err := c.Open(ctx, failing)
	mustTB(t, err)
	defer m1.Close(ctx)
	resp, err := m1.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon"})
	if err != nil || resp.Backend != BackendLocal || resp.Fallback == nil {
		t.Fatalf("Search()=backend %q fallback %+v, %v, want the local fallback", resp.Backend, resp.Fallback, err)
	}
	if c.Len() != 1 {
		t.Fatalf("Len()=%d after the primary failed, want 1 (the failed one evicted)", c.Len())
	}
	m2, err := c.Open(ctx, failing)
	mustTB(t, err)
	defer m2.Close(ctx)
	if m2.(*cached).Manager == m1.(*cached).Manager {
		t.Fatal("Open after the primary failed returned the evicted manager, want a new one that retries the primary")
	}
	// The evicted manager still serves its holder until it closes it.
	if _, err := m1.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon"}); err != nil {
		t.Fatalf("Search on the evicted manager: %v", err)
	}
}
