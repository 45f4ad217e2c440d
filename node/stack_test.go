package node

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex/embedder"
	"memindex/store"
)

// unavailableProvider is an OpenAI-speaking server answering 503 to every
// request; it counts them.
func unavailableProvider(t *testing.T) (url string, requests *atomic.Int64) {
	t.Helper()
	requests = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

// TestRebuildEmbedderTripsItsBreaker: the embedder rebuild builds is the
// full stack: with its provider down, Config.Breaker.Failures failures open
// its breaker and later calls never reach the provider (before issue 14,
// rebuild called the bare provider, retried by nothing but itself).
func TestRebuildEmbedderTripsItsBreaker(t *testing.T) {
	url, requests := unavailableProvider(t)
	cfg := testConfig(t.TempDir())
	cfg.Embedder = embedder.ProviderConfig{Name: "openai", BaseURL: url, Model: "down", Dims: 8, Timeout: time.Second, Retries: -1}
	cfg.Breaker = embedder.BreakerConfig{Failures: 2, Cooldown: time.Hour}
	r := rebuilder{req: RebuildRequest{Config: cfg, EmbedderSet: true}, dir: t.TempDir(), count: 1}
	ctx := context.Background()
	cache, err := store.OpenCacheWith(ctx, filepath.Join(t.TempDir(), "cache.db"), store.CacheConfig{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close(ctx)
	st, err := r.stack(ctx, 0, cache)
	if err != nil {
		t.Fatalf("rebuild stack: %v", err)
	}
	if st.Breaker == nil {
		t.Fatal("rebuild's embedder of a remote provider has no breaker")
	}
	for i := range 3 {
		_, _ = st.Embed(ctx, embedder.Request{Texts: []string{fmt.Sprint("text ", i)}})
	}
	if got := st.Breaker.State().State; got != embedder.BreakerOpen || requests.Load() != 2 {
		t.Fatalf("after 3 calls: breaker %s, %d provider requests; want open after 2", got, requests.Load())
	}
}

// TestRebuildBoundsTheEmbeddingCache: Rebuild opens the data directory's
// embedding cache with Config.CacheMaxBytes, so a cache filled unbounded is
// cut down to the bound (before issue 14, rebuild opened it
// with no bound at all).
func TestRebuildBoundsTheEmbeddingCache(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.PartitionCount, cfg.CacheMaxBytes = 1, 0 // unbounded while serving
	n, stop := runTestNode(t, cfg, nil)
	js, err := jetstream.New(n.nc)
	if err != nil {
		t.Fatal(err)
	}
	const msgs = 120
	publishLines(t, js, "garden", 1, msgs, false)
	waitUntil(t, 30*time.Second, "every message indexed with its vector", func() bool {
		st, err := n.Shards()[0].Stats(context.Background())
		return err == nil && st.Messages == msgs && st.VectorsWaiting == 0
	})
	stop()
	ctx := context.Background()
	cacheBytes := func(t *testing.T) int64 {
		t.Helper()
		c, err := store.OpenCacheWith(ctx, filepath.Join(dir, "cache.db"), store.CacheConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		st, err := c.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Bytes
	}
	// The built-in embedder is not cached (recomputing is cheaper than a
	// lookup), so fill the data directory's cache, unbounded, as a worker
	// with a remote provider would have.
	fill, err := store.OpenCacheWith(ctx, filepath.Join(dir, "cache.db"), store.CacheConfig{})
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string][]float32{}
	for i := range 200 {
		entries[fmt.Sprintf("openai|m|384|doc|text %d", i)] = make([]float32, 384)
	}
	if err := fill.PutMany(ctx, entries); err != nil {
		t.Fatal(err)
	}
	fill.Close(ctx)
	filled := cacheBytes(t)
	bound := filled / 4
	if bound < 4<<10 {
		t.Fatalf("the worker cached %d bytes, too few to bound", filled)
	}
	req := RebuildRequest{Config: cfg, Partitions: []int{0}, Every: 50 * time.Millisecond}
	req.CacheMaxBytes = bound
	var done RebuildEvent
	req.Progress = func(e RebuildEvent) {
		if e.Type == "rebuild.done" {
			done = e
		}
	}
	if err := Rebuild(ctx, req); err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	if done.Chunks == 0 || done.VectorsWaiting != 0 {
		t.Fatalf("rebuild done %+v, want every chunk with its vector", done)
	}
	if got := cacheBytes(t); got > bound {
		t.Fatalf("after the rebuild the cache holds %d bytes, over its bound of %d (was %d)", got, bound, filled)
	}
}

// TestPreviousGenerationGetsTheFullStack: a worker restarted with another
// embedder serves the old vectors with the old provider's embedder, built
// as the serving one is, breaker included (before issue 14 it was built
// without breaker or rate limit).
func TestPreviousGenerationGetsTheFullStack(t *testing.T) {
	url, _ := unavailableProvider(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.Embedder = embedder.ProviderConfig{Name: "openai", BaseURL: url, Model: "old", Dims: 8, Timeout: time.Second, Retries: -1}
	_, stop := runTestNode(t, cfg, nil)
	stop()

	cfg.Embedder = DefaultConfig().Embedder
	cfg.Embedder.Dims = 16
	n, _ := runTestNode(t, cfg, nil)
	if !n.switching() {
		t.Fatal("the worker restarted with another embedder is not building a new vector set")
	}
	n.genMu.RLock()
	old := n.serving.emb
	n.genMu.RUnlock()
	st, ok := old.(*embedder.Stack)
	if !ok || st.Breaker == nil || st.Info().Provider != "openai" {
		t.Fatalf("the previous generation's embedder is %T (%+v), want an *embedder.Stack of openai with a breaker", old, old)
	}
}
