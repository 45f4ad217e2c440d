package embedder_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"memindex/embedder"
)

// downProvider is an OpenAI-speaking server that answers every request 503
// and counts them.
func downProvider(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// TestNewStackRemoteHasBreakerAndRateLimit: a remote provider's stack fails
// fast once its breaker opens (no request reaches the provider after
// Failures failures) and waits for its rate limit before a request.
func TestNewStackRemoteHasBreakerAndRateLimit(t *testing.T) {
	srv, requests := downProvider(t)
	var observed atomic.Int64
	st, err := embedder.NewStack(embedder.StackConfig{
		Provider: embedder.ProviderConfig{Name: "openai", BaseURL: srv.URL, Model: "m", Dims: 8, Timeout: time.Second, Retries: -1,
			Observe: func(string, string, time.Duration) { observed.Add(1) }},
		RateLimit: embedder.RateLimitConfig{RequestsPerMinute: 2},
		Breaker:   embedder.BreakerConfig{Failures: 2, Cooldown: time.Hour},
		Pool:      embedder.PoolConfig{BatchSize: 4, Concurrency: 1},
		Cache:     embedder.NewMemoryCache(1 << 20),
	})
	if err != nil {
		t.Fatalf("NewStack: %v", err)
	}
	if st.Breaker == nil {
		t.Fatal("a remote provider's stack has no breaker")
	}
	ctx := context.Background()
	for i := range 2 {
		if _, err := st.Embed(ctx, embedder.Request{Texts: []string{fmt.Sprint("text ", i)}}); err == nil {
			t.Fatalf("Embed %d against a provider answering 503 succeeded", i)
		}
	}
	if got := st.Breaker.State().State; got != embedder.BreakerOpen {
		t.Fatalf("breaker %s after 2 failures, want %s", got, embedder.BreakerOpen)
	}
	_, err = st.Embed(ctx, embedder.Request{Texts: []string{"third"}})
	if !errors.Is(err, embedder.ErrBreakerOpen) {
		t.Fatalf("Embed with the breaker open = %v, want ErrBreakerOpen", err)
	}
	if n := requests.Load(); n != 2 {
		t.Fatalf("the provider got %d requests, want 2 (the open breaker stops the third)", n)
	}
	if observed.Load() != 2 {
		t.Fatalf("Observe saw %d requests, want 2", observed.Load())
	}

	// The rate limit of 2 a minute is spent: a third request would wait
	// half a minute, so a call bounded to 100ms ends waiting for it, and
	// never reaches the provider.
	st2, err := embedder.NewStack(embedder.StackConfig{
		Provider:  embedder.ProviderConfig{Name: "openai", BaseURL: srv.URL, Model: "m", Dims: 8, Timeout: time.Second, Retries: -1},
		RateLimit: embedder.RateLimitConfig{RequestsPerMinute: 2},
		Breaker:   embedder.BreakerConfig{Failures: 100},
		Pool:      embedder.PoolConfig{BatchSize: 4, Concurrency: 1},
		Cache:     embedder.NewMemoryCache(1 << 20),
	})
	if err != nil {
		t.Fatal(err)
	}
	before := requests.Load()
	for i := range 2 {
		_, _ = st2.Embed(ctx, embedder.Request{Texts: []string{fmt.Sprint("limited ", i)}})
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := st2.Embed(cctx, embedder.Request{Texts: []string{"over the limit"}}); err == nil {
		t.Fatal("a request over the rate limit succeeded")
	}
	if got := requests.Load() - before; got != 2 {
		t.Fatalf("the provider got %d requests within the rate limit of 2, want 2", got)
	}
}

// TestNewStackBuiltin: the built-in embedder's stack has no breaker,
// reports its calls to Observe and embeds repeats again rather than
// caching them (recomputing is cheaper than a cache lookup): every text
// counts as a miss and the cache stays empty.
func TestNewStackBuiltin(t *testing.T) {
	var observed atomic.Int64
	cache := embedder.NewMemoryCache(1 << 20)
	st, err := embedder.NewStack(embedder.StackConfig{
		Provider: embedder.ProviderConfig{Dims: 32, Observe: func(_, code string, _ time.Duration) {
			if code == embedder.CodeOK {
				observed.Add(1)
			}
		}},
		Pool:  embedder.PoolConfig{BatchSize: 8, Concurrency: 2},
		Cache: cache,
	})
	if err != nil {
		t.Fatalf("NewStack: %v", err)
	}
	if st.Breaker != nil || st.Info().Provider != "builtin" || st.Info().Dims != 32 {
		t.Fatalf("builtin stack: breaker %v, info %+v; want no breaker, builtin at 32 dims", st.Breaker, st.Info())
	}
	ctx := context.Background()
	for range 2 {
		if _, err := st.Embed(ctx, embedder.Request{Texts: []string{"the same text"}}); err != nil {
			t.Fatal(err)
		}
	}
	if s := st.Stats(); s.Hits != 0 || s.Misses != 2 || observed.Load() != 2 {
		t.Fatalf("cache hits %d misses %d, observed calls %d; want 0, 2, 2", s.Hits, s.Misses, observed.Load())
	}
	if n := cache.Len(); n != 0 {
		t.Fatalf("the built-in embedder's vectors went into the cache: %d entries", n)
	}
}

// TestNewProviderErrorsNameTheFlag: an unknown provider or a hosted one
// without a key names --embedder and the key's variables.
func TestNewProviderErrorsNameTheFlag(t *testing.T) {
	for _, tt := range []struct {
		c    embedder.ProviderConfig
		want string
	}{
		{embedder.ProviderConfig{Name: "word2vec"}, `--embedder "word2vec": unknown provider`},
		{embedder.ProviderConfig{Name: "voyage"}, "--embedder voyage needs an API key in VOYAGE_API_KEY (or VOYAGE_API_KEY_FILE)"},
		{embedder.ProviderConfig{Name: "gemini", Keys: func(string) (string, error) { return "", nil }}, "GEMINI_API_KEY or GOOGLE_API_KEY"},
	} {
		if _, err := embedder.NewProvider(tt.c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewProvider(%+v) = %v, want an error containing %q", tt.c, err, tt.want)
		}
	}
}

// TestSpaceRoundTrip: ParseSpace reads back what Space names.
func TestSpaceRoundTrip(t *testing.T) {
	for _, info := range []embedder.Info{
		{Provider: "builtin", Model: "hash-v2", Dims: 384},
		{Provider: "openai", Model: "text-embedding-3-small", Dims: 1536, BaseURL: "http://127.0.0.1:8080"},
		{Provider: "ollama", Model: "nomic/embed:v1", Dims: 768},
	} {
		space := embedder.Space(info)
		c, err := embedder.ParseSpace(space)
		want := info.BaseURL
		if info.Provider == "builtin" {
			want = ""
		}
		if err != nil || c.Name != info.Provider || c.Model != info.Model || c.Dims != info.Dims || c.BaseURL != want {
			t.Errorf("ParseSpace(%q) = %+v, %v; want %+v", space, c, err, info)
		}
	}
	if _, err := embedder.ParseSpace("builtin/384"); err == nil {
		t.Error("ParseSpace of provider/dims without a model succeeded")
	}
}
