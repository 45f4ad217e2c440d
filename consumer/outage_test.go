package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"memindex/chunker"
	"memindex/embedder"
	"memindex/store"
)

// openAIServer speaks OpenAI's /v1/embeddings API with the built-in
// embedder's vectors, and answers 503 while down is set.
func openAIServer(t *testing.T, down *atomic.Bool) *httptest.Server {
	t.Helper()
	b, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		if down.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error"}}`)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
			return
		}
		vecs, _ := b.Embed(r.Context(), embedder.Request{Texts: req.Input})
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: req.Model}
		for i, v := range vecs {
			out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: v})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestProviderOutageLosesNothing: with the provider answering 503, events
// still commit and are keyword-searchable at once while the chunks wait for
// vectors; after recovery the backfill embeds every one of them and vector
// search finds each chunk.
func TestProviderOutageLosesNothing(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	srv := openAIServer(t, &down)
	emb, err := embedder.NewOpenAI(embedder.OpenAIConfig{BaseURL: srv.URL, Model: "local-hash", Dims: testDims,
		HTTP: embedder.HTTPConfig{MaxRetries: 1, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, emb)
	const ns = "outage"
	for i := int64(1); i <= 80; i++ {
		h.publishEvent(message(ns, fmt.Sprintf("chat-%d", i%4), "s1", i/4+1, fmt.Sprintf("note %d mentions keyword%d and the harbour", i, i)))
	}
	waitFor(t, "80 messages committed while the provider is down", func() bool { return h.stats(ns).Messages == 80 })
	st := h.stats(ns)
	if st.OldestWaiting.IsZero() {
		t.Fatal("during the outage: Stats().OldestWaiting is zero, want when the oldest waiting chunk was stored")
	}
	if st.VectorsWaiting == 0 || st.VectorsWaiting != st.Chunks {
		t.Fatalf("during the outage: %d of %d chunks wait for vectors, want all", st.VectorsWaiting, st.Chunks)
	}
	if v, c := h.shardOf(ns).VectorCoverage(ns); v != 0 || c != st.Chunks {
		t.Fatalf("VectorCoverage during the outage = %d of %d, want 0 of %d", v, c, st.Chunks)
	}
	// Stats counts only what searches find (store's Shard.visible), so
	// the message it counted is keyword-searchable at once.
	got, err := h.shardOf(ns).KeywordSearch(context.Background(), ns, "keyword42", store.Filter{}, 5)
	if err != nil || len(got) == 0 {
		t.Fatalf("keyword search during the outage = %v, %v; want a hit", got, err)
	}

	down.Store(false)
	waitFor(t, "the backfill to embed every chunk", func() bool { return h.stats(ns).VectorsWaiting == 0 })
	if !h.stats(ns).OldestWaiting.IsZero() {
		t.Fatal("after recovery: Stats().OldestWaiting is set, want zero")
	}
	if v, c := h.shardOf(ns).VectorCoverage(ns); v != c {
		t.Fatalf("VectorCoverage after recovery = %d of %d, want all", v, c)
	}
	ctx := context.Background()
	for key := range 4 {
		ref := store.SessionRef{Namespace: ns, SessionKey: fmt.Sprintf("chat-%d", key), SessionID: "s1"}
		spans, err := h.shardOf(ns).SessionChunkSpans(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(spans))
		for i, sp := range spans {
			ids[i] = sp.ID
		}
		recs, err := h.shardOf(ns).ChunksByID(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			vec, err := emb.Embed(ctx, embedder.Request{Texts: []string{chunker.EmbedText(recs[id].Context, recs[id].Text)}, Kind: embedder.KindQuery})
			if err != nil {
				t.Fatal(err)
			}
			hits, err := h.shardOf(ns).VectorSearch(ctx, ns, vec[0], store.Filter{SessionKey: ref.SessionKey}, 1)
			if err != nil || len(hits) != 1 || hits[0].ID != id {
				t.Fatalf("vector search for chunk %s = %v, %v; want it first", id, hits, err)
			}
		}
	}
}
