package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/embedder"
)

// TestProviderOutageOpensTheBreaker runs a worker whose provider is an
// OpenAI-speaking httptest server: while it answers 503 the breaker opens
// (status says so), events still commit and wait for vectors, and searches
// answer keyword-only, flagged; after recovery the breaker closes and every
// chunk gets its vector.
func TestProviderOutageOpensTheBreaker(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []item `json:"data"`
		}
		for i, text := range req.Input {
			v := make([]float32, 16)
			for j := range v {
				v[j] = float32(math.Sin(float64(len(text)*(j+1) + j)))
			}
			out.Data = append(out.Data, item{Index: i, Embedding: v})
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()

	cfg := testConfig(t.TempDir())
	cfg.Embedder = embedder.ProviderConfig{Name: "openai", BaseURL: srv.URL, Model: "local-test", Dims: 16, Timeout: time.Second, Retries: -1}
	cfg.Breaker = embedder.BreakerConfig{Failures: 2, Cooldown: 200 * time.Millisecond}
	cfg.Batch, cfg.Worker, cfg.SearchPending = 100, "breaker-test", 16
	n, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	defer func() { cancel(); <-done }()

	js, err := jetstream.New(n.nc)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 30; i++ {
		b, _ := json.Marshal(memindex.Event{Type: memindex.TypeMessage, SessionKey: "chat", SessionID: "s1", Seq: int64(i),
			Speaker: "Ana", Text: fmt.Sprintf("message %d about the lighthouse keeper", i)})
		if _, err := js.Publish(context.Background(), memindex.EventSubject("beacon"), b); err != nil {
			t.Fatal(err)
		}
	}
	cl := client.NewClient(n.nc)
	status := func() memindex.StatusResponse {
		sts, err := cl.Status(context.Background(), 200*time.Millisecond)
		if err != nil || len(sts) != 1 {
			return memindex.StatusResponse{}
		}
		return sts[0]
	}
	waiting := func(s memindex.StatusResponse) (msgs, wait int64) {
		t := s.Total()
		return t.Messages, t.VectorsWaiting
	}
	waitUntil(t, 30*time.Second, "the breaker to open with every message committed and waiting", func() bool {
		s := status()
		m, w := waiting(s)
		return s.Embedder.Breaker == embedder.BreakerOpen && m == 30 && w > 0
	})
	hs, err := cl.Health(context.Background(), 200*time.Millisecond)
	if err != nil || len(hs) != 1 || hs[0].Status != memindex.HealthDegraded || !strings.Contains(hs[0].Embeddings, "breaker open") {
		t.Fatalf("health during the outage = %+v, %v; want degraded, naming the open breaker", hs, err)
	}
	resp, err := cl.Search(context.Background(), memindex.SearchRequest{Namespace: "beacon", Query: "lighthouse keeper"})
	if err != nil || len(resp.Hits) == 0 || resp.Legs.Vector.Answered || len(resp.Degraded) == 0 {
		t.Fatalf("search during the outage = %d hits, legs %+v, degraded %q, abstained %q, %v; want keyword hits, flagged", len(resp.Hits), resp.Legs, resp.Degraded, resp.Abstained, err)
	}

	down.Store(false)
	waitUntil(t, 30*time.Second, "the breaker to close and every chunk to get its vector", func() bool {
		s := status()
		_, w := waiting(s)
		return s.Embedder.Breaker == embedder.BreakerClosed && w == 0
	})
	resp, err = cl.Search(context.Background(), memindex.SearchRequest{Namespace: "beacon", Query: "lighthouse keeper"})
	if err != nil || !resp.Legs.Vector.Answered || len(resp.Degraded) != 0 {
		t.Fatalf("search after recovery: vector leg %+v, degraded %q, %v; want both legs whole", resp.Legs.Vector, resp.Degraded, err)
	}
}
