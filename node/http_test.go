package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/consumer"
	"memindex/internal/natstest"
)

// obsConfig is the configuration of a test worker with its HTTP endpoints
// on a free port, on an embedded server unless server is set.
func obsConfig(dir, server string, partitions int) Config {
	c := testConfig(dir)
	c.PartitionCount, c.Embedder.Dims, c.Batch, c.ChunkTokens, c.Worker = partitions, 64, 100, 200, "obs"
	c.HTTP, c.HTTPRequired, c.ReadyLag = "127.0.0.1:0", true, DefaultReadyLag
	c.NATS.Server = server
	return c
}

// runNode runs a started node until the test ends.
func runNode(t *testing.T, n *Node) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	})
}

// startObsNode starts and runs a worker with cfg.
func startObsNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	runNode(t, n)
	return n
}

// get fetches path from the node's HTTP endpoints.
func get(t *testing.T, n *Node, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + n.httpAddr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// scrape reads /metrics as Prometheus text into series → value, a series
// being its name with its labels as exposed (sorted by label name).
func scrape(t *testing.T, n *Node) (map[string]float64, string) {
	t.Helper()
	code, body := get(t, n, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200:\n%s", code, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out, body
}

// wantSeries fails unless series has value want.
func wantSeries(t *testing.T, m map[string]float64, series string, want float64) {
	t.Helper()
	got, ok := m[series]
	if !ok {
		t.Errorf("/metrics has no %s", series)
		return
	}
	if got != want {
		t.Errorf("%s = %v, want %v", series, got, want)
	}
}

func publishLines(t *testing.T, js jetstream.JetStream, ns string, from, to int, bad bool) {
	t.Helper()
	for i := from; i <= to; i++ {
		data := fmt.Sprintf(`{"type":"message","namespace":%q,"sessionKey":"chat","sessionId":"s1","seq":%d,"speaker":"Ana","text":"message %d about the lighthouse keeper"}`, ns, i, i)
		if _, err := js.Publish(context.Background(), memindex.EventSubject(ns), []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if bad {
		if _, err := js.Publish(context.Background(), memindex.EventSubject(ns), []byte(`{"type":"message",`)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMetricsAfterIngestAndSearch ingests events (one malformed), searches,
// scrapes /metrics over HTTP and finds every counter moved by exactly the
// right amount, the gauges of the partition, and no namespace anywhere.
func TestMetricsAfterIngestAndSearch(t *testing.T) {
	const partitions = 2
	n := startObsNode(t, obsConfig(t.TempDir(), "", partitions))
	const ns = "zebra-tenant-4711"
	p := strconv.Itoa(memindex.Partition(ns, partitions))
	ctx := context.Background()
	cl := client.NewClient(n.nc)
	waitApplied := func(msgs int64, dlq uint64) {
		t.Helper()
		waitUntil(t, 30*time.Second, fmt.Sprintf("%d messages and %d dead letters applied, vectors done", msgs, dlq), func() bool {
			sts, err := cl.Status(ctx, 200*time.Millisecond)
			if err != nil || len(sts) != 1 {
				return false
			}
			tot := sts[0].Total()
			return tot.Messages == msgs && sts[0].DLQ == dlq && tot.VectorsWaiting == 0 && tot.Pending == 0 && tot.AckPending == 0
		})
	}

	const first = 12
	publishLines(t, n.js, ns, 1, first, true)
	waitApplied(first, 1)
	const searches = 3
	for i := range searches {
		if _, err := cl.Search(ctx, memindex.SearchRequest{Namespace: ns, Query: fmt.Sprintf("lighthouse keeper %d", i)}); err != nil {
			t.Fatalf("search: %v", err)
		}
	}
	if _, err := n.nc.Request(memindex.SearchSubject(ns), []byte(`{"query":`), 5*time.Second); err != nil {
		t.Fatal(err)
	}

	m, body := scrape(t, n)
	wantSeries(t, m, `memindex_ingest_messages_total{outcome="indexed"}`, first)
	wantSeries(t, m, `memindex_ingest_messages_total{outcome="dlq"}`, 1)
	wantSeries(t, m, `memindex_ingest_messages_total{outcome="duplicate"}`, 0)
	wantSeries(t, m, `memindex_session_messages_indexed_total`, first)
	wantSeries(t, m, `memindex_search_duration_seconds_count{leg="total"}`, searches)
	wantSeries(t, m, `memindex_search_duration_seconds_count{leg="keyword"}`, searches)
	wantSeries(t, m, `memindex_search_duration_seconds_count{leg="vector"}`, searches)
	wantSeries(t, m, `memindex_rejected_requests_total{endpoint="search",reason="bad_request"}`, 1)
	wantSeries(t, m, `memindex_applied_sequence{partition="`+p+`"}`, first+1)
	wantSeries(t, m, `memindex_consumer_pending{partition="`+p+`"}`, 0)
	wantSeries(t, m, `memindex_chunks_waiting_vectors{partition="`+p+`"}`, 0)
	wantSeries(t, m, `memindex_dlq_messages{partition="`+p+`"}`, 1)
	wantSeries(t, m, `memindex_sqlite_busy_total`, 0)
	if m[`memindex_batch_duration_seconds_count`] < 1 {
		t.Errorf("memindex_batch_duration_seconds_count = %v, want at least one batch", m[`memindex_batch_duration_seconds_count`])
	}
	if m[`memindex_embed_requests_total{code="ok",provider="builtin"}`] < 1 || m[`memindex_embed_request_duration_seconds_count{provider="builtin"}`] < 1 {
		t.Errorf("no embed request counted for the built-in embedder")
	}
	if m[`memindex_embed_cache_misses_total`] < searches+1 {
		t.Errorf("memindex_embed_cache_misses_total = %v, want at least %d (the chunks and each new query)", m[`memindex_embed_cache_misses_total`], searches+1)
	}
	if m[`memindex_sqlite_wal_bytes{partition="`+p+`"}`] <= 0 {
		t.Errorf("memindex_sqlite_wal_bytes{partition=%q} = %v, want the size of the shard's WAL", p, m[`memindex_sqlite_wal_bytes{partition="`+p+`"}`])
	}
	// The checkpointer runs after the commit, on its own goroutine.
	ckpt := `memindex_sqlite_checkpoints_total{partition="` + p + `"}`
	for deadline := time.Now().Add(10 * time.Second); m[ckpt] < 1; m, _ = scrape(t, n) {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v after 10s, want the checkpoints of the batches", ckpt, m[ckpt])
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := m[`memindex_breaker_state{provider="builtin"}`]; ok {
		t.Errorf("the built-in embedder has no breaker, but /metrics reports one")
	}
	if strings.Contains(body, ns) || strings.Contains(body, "zebra") {
		t.Errorf("/metrics mentions the namespace %q:\n%s", ns, body)
	}

	// More events and a redelivery-free second round: the counters move by
	// exactly what was added.
	const more = 5
	publishLines(t, n.js, ns, first+1, first+more, false)
	waitApplied(first+more, 1)
	m2, _ := scrape(t, n)
	for series, delta := range map[string]float64{
		`memindex_ingest_messages_total{outcome="indexed"}`:   more,
		`memindex_ingest_messages_total{outcome="dlq"}`:       0,
		`memindex_search_duration_seconds_count{leg="total"}`: 0,
		`memindex_applied_sequence{partition="` + p + `"}`:    more,
		`memindex_session_messages_indexed_total`:             more,
	} {
		if got := m2[series] - m[series]; got != delta {
			t.Errorf("%s moved by %v, want %v", series, got, delta)
		}
	}

	// A messages event of 3 messages is one event and 3 session messages.
	batch := fmt.Sprintf(`{"type":"messages","sessionKey":"chat","sessionId":"s1","messages":[{"seq":%d,"text":"a"},{"seq":%d,"text":"b"},{"seq":%d,"text":"c"}]}`,
		first+more+1, first+more+2, first+more+3)
	if _, err := n.js.Publish(ctx, memindex.EventSubject(ns), []byte(batch)); err != nil {
		t.Fatal(err)
	}
	waitApplied(first+more+3, 1)
	m3, _ := scrape(t, n)
	for series, delta := range map[string]float64{
		`memindex_ingest_messages_total{outcome="indexed"}`: 1,
		`memindex_session_messages_indexed_total`:           3,
	} {
		if got := m3[series] - m2[series]; got != delta {
			t.Errorf("after a messages event, %s moved by %v, want %v", series, got, delta)
		}
	}
}

// TestReadyzFollowsARebuild starts a worker on an empty data directory
// against a stream that already holds events: /readyz answers 503 naming
// the partition that rebuilds (and its lag over the budget) until the
// worker runs and catches up, then 200; a draining node is not ready.
func TestReadyzFollowsARebuild(t *testing.T) {
	const partitions = 2
	srv := natstest.Server(t)
	nc := natstest.Connect(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.EnsureStreams(context.Background(), js, consumer.StreamConfig{Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	const ns = "rebuilder"
	const events = 40
	publishLines(t, js, ns, 1, events, false)
	p := memindex.Partition(ns, partitions)

	cfg := obsConfig(t.TempDir(), srv.ClientURL(), partitions)
	cfg.ReadyLag = 10
	n, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	// Started, not yet consuming: the partition of ns must rebuild.
	code, body := get(t, n, "/readyz")
	var rb readyBody
	if err := json.Unmarshal([]byte(body), &rb); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	wantRebuild := fmt.Sprintf("partition %d: rebuilding from the stream (applied sequence 0 of %d); %d events pending, over the --ready-lag budget of 10", p, events, events)
	if code != http.StatusServiceUnavailable || rb.Ready || !contains(rb.Reasons, wantRebuild) || !contains(rb.Reasons, "the worker is not consuming") {
		t.Fatalf("/readyz before consuming = %d %+v, want 503 with %q", code, rb, wantRebuild)
	}
	for _, r := range rb.Reasons {
		if strings.HasPrefix(r, fmt.Sprintf("partition %d:", 1-p)) {
			t.Errorf("/readyz blames partition %d, which holds no events: %q", 1-p, r)
		}
	}
	if code, _ := get(t, n, "/livez"); code != http.StatusOK {
		t.Errorf("/livez = %d, want 200 while alive", code)
	}

	runNode(t, n)
	waitUntil(t, 30*time.Second, "/readyz to answer 200 once caught up", func() bool {
		code, _ := get(t, n, "/readyz")
		return code == http.StatusOK
	})
	if got, _ := n.serving.worker.Applied(p); got != events {
		t.Fatalf("ready with partition %d applied to %d, want %d", p, got, events)
	}

	n.draining.Store(true)
	code, body = get(t, n, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Fatalf("/readyz while draining = %d %s, want 503 saying draining", code, body)
	}
	n.draining.Store(false)
}

// TestReadyzNotConnected: a worker whose NATS connection is not connected
// is not ready, and says so.
func TestReadyzNotConnected(t *testing.T) {
	n := startObsNode(t, obsConfig(t.TempDir(), "", 1))
	waitUntil(t, 30*time.Second, "/readyz 200", func() bool { c, _ := get(t, n, "/readyz"); return c == http.StatusOK })
	// A closed second connection stands in for the node's own, which the
	// node still needs to shut down.
	nc, err := nats.Connect(n.url)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	saved := n.nc
	n.nc = nc
	reasons := n.notReady(context.Background())
	n.nc = saved
	if !contains(reasons, "NATS connection is CLOSED") {
		t.Fatalf("notReady() with a closed connection = %q, want it to name the connection", reasons)
	}
}

// TestHTTPFlags checks --http off, a taken address asked for (an error that
// names the flag) and a taken default (a warning, the worker starts).
func TestHTTPFlags(t *testing.T) {
	cfg := obsConfig(t.TempDir(), "", 1)
	cfg.HTTP = "off"
	n := startObsNode(t, cfg)
	if n.httpAddr != "" {
		t.Fatalf("--http off started endpoints on %s", n.httpAddr)
	}
	busy := startObsNode(t, obsConfig(t.TempDir(), "", 1))
	cfg = obsConfig(t.TempDir(), "", 1)
	cfg.HTTP = busy.httpAddr
	if _, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--http") {
		t.Fatalf("Open on a taken --http address: err=%v, want an error naming --http", err)
	}
	cfg.HTTPRequired = false
	n = startObsNode(t, cfg)
	if n.httpAddr != "" {
		t.Fatalf("a taken default address: endpoints on %q, want none", n.httpAddr)
	}
	cfg = obsConfig(t.TempDir(), "", 1)
	cfg.ReadyLag = -1
	if _, err := Open(context.Background(), cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--ready-lag") {
		t.Fatalf("Open with --ready-lag -1: err=%v, want an error naming --ready-lag", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
