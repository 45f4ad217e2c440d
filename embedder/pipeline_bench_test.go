package embedder

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The pipeline benchmark: Batched over OpenAI against a local server speaking
// OpenAI's /v1/embeddings that answers every request after a fixed latency,
// as a remote provider would. It reports the chunks embedded per second for
// each batch size and pool size, and the most requests the server saw in
// flight at once, which must never exceed the pool size.

const (
	pipeDims    = 64   // vector length the server answers
	pipeChunks  = 1024 // texts per Embed call in the benchmark
	pipeWordsIn = 40   // words per text
)

// pipeServer is a fake OpenAI-compatible provider with a fixed latency per
// request that counts requests in flight.
type pipeServer struct {
	*httptest.Server
	latency time.Duration

	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	requests    atomic.Int64
	texts       atomic.Int64
	failures    atomic.Int64 // requests answered with an error status
}

func newPipeServer(tb testing.TB, latency time.Duration) *pipeServer {
	tb.Helper()
	s := &pipeServer{latency: latency}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	tb.Cleanup(s.Close)
	return s
}

func (s *pipeServer) handle(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	for m := s.maxInFlight.Load(); n > m && !s.maxInFlight.CompareAndSwap(m, n); m = s.maxInFlight.Load() {
	}
	done := func() { s.inFlight.Add(-1) }

	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		done()
		s.failures.Add(1)
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Input) == 0 {
		done()
		s.failures.Add(1)
		http.Error(w, `{"error":{"message":"bad request body","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}

	time.Sleep(s.latency) // the provider's fixed latency

	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	resp := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Data: make([]item, len(req.Input)), Model: req.Model}
	for i, t := range req.Input {
		resp.Data[i] = item{Object: "embedding", Index: i, Embedding: pipeVector(t)}
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(resp); err != nil {
		done()
		s.failures.Add(1)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.requests.Add(1)
	s.texts.Add(int64(len(req.Input)))
	// Leave the in-flight count before the client can see the answer, so
	// the client's next request is never counted together with this one.
	done()
	w.Header().Set("Content-Type", "application/json")
	w.Write(buf.Bytes())
}

// reset clears the counters.
func (s *pipeServer) reset() {
	s.maxInFlight.Store(0)
	s.requests.Store(0)
	s.texts.Store(0)
	s.failures.Store(0)
}

// pipeVector is the deterministic unit vector the server answers for text.
func pipeVector(text string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	x := h.Sum64()
	v := make([]float32, pipeDims)
	var sum float64
	for i := range v {
		x += 0x9e3779b97f4a7c15 // splitmix64
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		f := float64(z>>11)/(1<<53)*2 - 1
		v[i] = float32(f)
		sum += f * f
	}
	norm := math.Sqrt(sum)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

var pipeWords = strings.Fields(`memory index vector search chunk embed provider
	batch pool latency request answer server client cache store query document
	token model dimension neighbour cosine score rank result note meeting
	project deadline review design schema table column record event stream
	subject message queue worker budget limit retry backoff window`)

// pipeTexts returns n distinct texts of about pipeWordsIn words each, the same
// on every call.
func pipeTexts(n int) []string {
	texts := make([]string, n)
	x := uint64(0x2545f4914f6cdd1d)
	for i := range texts {
		var b strings.Builder
		fmt.Fprintf(&b, "chunk %d:", i)
		for range pipeWordsIn {
			x ^= x << 13 // xorshift64
			x ^= x >> 7
			x ^= x << 17
			b.WriteByte(' ')
			b.WriteString(pipeWords[x%uint64(len(pipeWords))])
		}
		texts[i] = b.String()
	}
	return texts
}

// newPipeline returns Batched over OpenAI talking to srv through the client
// the command uses for providers (NewSafeHTTPClient).
func newPipeline(tb testing.TB, srv *pipeServer, cfg PoolConfig) Embedder {
	tb.Helper()
	client, err := NewSafeHTTPClient(srv.URL, 0)
	if err != nil {
		tb.Fatalf("NewSafeHTTPClient(%s): %v", srv.URL, err)
	}
	tb.Cleanup(client.CloseIdleConnections)
	provider, err := NewOpenAI(OpenAIConfig{
		BaseURL:  srv.URL,
		Model:    "bench",
		Dims:     pipeDims,
		MaxBatch: 4096, // Batched does the splitting
		HTTP:     HTTPConfig{Client: client, Timeout: 30 * time.Second, MaxRetries: -1},
	})
	if err != nil {
		tb.Fatalf("NewOpenAI: %v", err)
	}
	return NewBatched(provider, cfg)
}

// BenchmarkPipeline embeds pipeChunks texts per iteration through Batched
// over OpenAI against a server answering each request after 50ms. chunks/s
// is the throughput, ideal-chunks/s what the pool allows at that latency
// with no overhead (pipeChunks / (waves of requests × latency)), and
// max-concurrency the most requests the server had in flight at once.
//
//	go test -run '^$' -bench Pipeline -benchtime 3x ./embedder
func BenchmarkPipeline(b *testing.B) {
	const latency = 50 * time.Millisecond
	texts := pipeTexts(pipeChunks)
	for _, batch := range []int{16, 64, 256} {
		for _, pool := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("batch=%d/pool=%d", batch, pool), func(b *testing.B) {
				srv := newPipeServer(b, latency)
				emb := newPipeline(b, srv, PoolConfig{BatchSize: batch, Concurrency: pool})
				ctx := context.Background()
				srv.reset()

				iters := 0
				start := time.Now()
				for b.Loop() {
					vecs, err := emb.Embed(ctx, Request{Texts: texts, Kind: KindDocument})
					if err != nil {
						b.Fatalf("Embed: %v", err)
					}
					if len(vecs) != len(texts) {
						b.Fatalf("Embed returned %d vectors for %d texts", len(vecs), len(texts))
					}
					iters++
				}
				elapsed := time.Since(start)

				peak := srv.maxInFlight.Load()
				if peak > int64(pool) {
					b.Fatalf("provider saw %d requests in flight, pool bound is %d", peak, pool)
				}
				if f := srv.failures.Load(); f != 0 {
					b.Fatalf("server answered %d requests with an error", f)
				}
				requests := (pipeChunks + batch - 1) / batch
				if got, want := srv.requests.Load(), int64(iters*requests); got != want {
					b.Fatalf("server answered %d requests, want %d (%d per Embed)", got, want, requests)
				}
				waves := (requests + pool - 1) / pool
				b.ReportMetric(float64(iters*pipeChunks)/elapsed.Seconds(), "chunks/s")
				b.ReportMetric(float64(pipeChunks)/(float64(waves)*latency.Seconds()), "ideal-chunks/s")
				b.ReportMetric(float64(peak), "max-concurrency")
			})
		}
	}
}

// TestPipelineConcurrencyBound checks that Batched keeps the provider's
// request concurrency at its pool size: it reaches the bound and never
// exceeds it.
func TestPipelineConcurrencyBound(t *testing.T) {
	const (
		latency = 20 * time.Millisecond
		n       = 256
		batch   = 16
		pool    = 4
	)
	srv := newPipeServer(t, latency)
	emb := newPipeline(t, srv, PoolConfig{BatchSize: batch, Concurrency: pool})
	texts := pipeTexts(n)

	vecs, err := emb.Embed(context.Background(), Request{Texts: texts, Kind: KindDocument})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(vecs) != n {
		t.Fatalf("Embed returned %d vectors for %d texts", len(vecs), n)
	}
	for i, v := range vecs {
		want := pipeVector(texts[i])
		if len(v) != len(want) {
			t.Fatalf("vector %d has %d dims, want %d", i, len(v), len(want))
		}
		for j := range v {
			if math.Abs(float64(v[j]-want[j])) > 1e-5 {
				t.Fatalf("vector %d is not text %d's (dim %d: %v, want %v)", i, i, j, v[j], want[j])
			}
		}
	}
	if got, want := srv.requests.Load(), int64(n/batch); got != want {
		t.Errorf("server answered %d requests, want %d", got, want)
	}
	if got := srv.texts.Load(); got != n {
		t.Errorf("server embedded %d texts, want %d", got, n)
	}
	if f := srv.failures.Load(); f != 0 {
		t.Errorf("server answered %d requests with an error", f)
	}
	if got := srv.maxInFlight.Load(); got != pool {
		t.Errorf("provider saw at most %d requests in flight, want exactly the pool size %d", got, pool)
	}
}
