package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/embedder"
	"memindex/internal/natstest"
)

// The remote backend of client.Open (client/remote.go) against real
// workers: Sync, ProbeEmbeddings and ProbeVectors.

// openRemote opens the remote backend on a new connection to s. Each
// status and health request gathers replies for statusWait.
func openRemote(t *testing.T, s *server.Server, statusWait time.Duration) client.Manager {
	t.Helper()
	m, err := client.Open(context.Background(), client.Config{Backend: client.BackendRemote,
		Remote: client.RemoteConfig{Conn: natstest.Connect(t, s), StatusWait: statusWait, SyncPoll: 20 * time.Millisecond}})
	if err != nil {
		t.Fatalf("Open(remote): %v", err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

// staticWorker runs a worker on s holding all 4 partitions.
func staticWorker(t *testing.T, s *server.Server, name string, edit func(*Config)) *Node {
	t.Helper()
	n, _ := clusterNode(t, s, name, func(c *Config) {
		c.PartitionCount = replicaPartitions
		if edit != nil {
			edit(c)
		}
	})
	return n
}

// searchText searches m for ns and reports whether a hit holds text.
func searchText(t *testing.T, m client.Manager, ns, text string) bool {
	t.Helper()
	resp, err := m.Search(context.Background(), memindex.SearchRequest{Namespace: ns, Query: "marmalade recipe", K: 20})
	if err != nil {
		t.Fatalf("Search(%s): %v", ns, err)
	}
	checkHits(t, ns, resp)
	for _, h := range resp.Hits {
		if strings.Contains(h.Text, text) {
			return true
		}
	}
	return false
}

// TestRemoteSyncMakesPublishedEventsSearchable: events published, then
// Sync, then every one of them is found by the first search, without
// polling; Sync with the publish acknowledgement's sequence does the same
// for one event.
func TestRemoteSyncMakesPublishedEventsSearchable(t *testing.T) {
	s := natstest.Server(t)
	staticWorker(t, s, "w1", nil)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	m := openRemote(t, s, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	namespaces := testNamespaces(60)
	for round := 1; round <= 3; round++ {
		publishRound(t, js, namespaces, round)
	}
	if err := m.Sync(ctx, client.SyncRequest{}); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	for _, ns := range namespaces {
		if !searchText(t, m, ns, replicaText(ns, 3)) {
			t.Errorf("search %s right after Sync misses its last message %q", ns, replicaText(ns, 3))
		}
	}

	last := publishRound(t, js, namespaces[:1], 4)
	seq := last[memindex.Partition(namespaces[0], replicaPartitions)]
	if err := m.Sync(ctx, client.SyncRequest{Seq: seq}); err != nil {
		t.Fatalf("Sync(Seq %d): %v", seq, err)
	}
	if !searchText(t, m, namespaces[0], replicaText(namespaces[0], 4)) {
		t.Errorf("search %s right after Sync(Seq %d) misses %q", namespaces[0], seq, replicaText(namespaces[0], 4))
	}
}

// TestRemoteSyncFailsWhileAPartitionCannotCatchUp: a partition whose
// commits are fenced cannot apply what was published; Sync, with or
// without a sequence, ends with the context's error naming the partition
// and its backlog. Once the fence is lifted Sync returns and the event is
// found.
func TestRemoteSyncFailsWhileAPartitionCannotCatchUp(t *testing.T) {
	s := natstest.Server(t)
	w := staticWorker(t, s, "w1", nil)
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	m := openRemote(t, s, 500*time.Millisecond)
	// Two namespaces in different partitions; stuck's commits are refused.
	namespaces := testNamespaces(16)
	stuck, free := namespaces[0], ""
	for _, ns := range namespaces[1:] {
		if memindex.Partition(ns, replicaPartitions) != memindex.Partition(stuck, replicaPartitions) {
			free = ns
			break
		}
	}
	if free == "" {
		t.Fatalf("namespaces %v all fall in one partition; use more", namespaces)
	}
	pStuck := memindex.Partition(stuck, replicaPartitions)
	w.fence(pStuck, time.Now().Add(-time.Second))
	seqStuck := publishRound(t, js, []string{stuck}, 1)[pStuck]
	seqFree := publishRound(t, js, []string{free}, 1)[memindex.Partition(free, replicaPartitions)]

	for _, req := range []client.SyncRequest{{}, {Seq: seqStuck}, {Seq: seqFree}} {
		// Several polls of 0.5 s fit; the last one is cut short.
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		err := m.Sync(ctx, req)
		cancel()
		want := fmt.Sprintf("partition %d: applied 0", pStuck)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Sync(%+v) with partition %d fenced = %v; want the deadline's error naming %q", req, pStuck, err, want)
		}
	}

	w.fence(pStuck, time.Time{}) // no fence: it commits
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Sync(ctx, client.SyncRequest{Seq: seqStuck}); err != nil {
		t.Fatalf("Sync after the fence was lifted: %v", err)
	}
	if !searchText(t, m, stuck, replicaText(stuck, 1)) {
		t.Errorf("search %s right after Sync misses %q", stuck, replicaText(stuck, 1))
	}
}

// TestRemoteSyncFailsWhileNoWorkerHoldsAPartition: the only worker holds
// partitions 0-1 of 4; what is published to 2 and 3 is applied nowhere, so
// Sync does not return nil but the deadline's error naming partition 2.
func TestRemoteSyncFailsWhileNoWorkerHoldsAPartition(t *testing.T) {
	s := natstest.Server(t)
	staticWorker(t, s, "w1", func(c *Config) { c.Partitions = "0-1" })
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	publishRound(t, js, testNamespaces(16), 1)
	m := openRemote(t, s, 500*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	err = m.Sync(ctx, client.SyncRequest{})
	if want := "partition 2: no worker reported it"; !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Sync() with partitions 2-3 held by nobody = %v; want the deadline's error naming %q", err, want)
	}
}

// TestRemoteSyncWaitsForEveryReplica: with two holders of each partition,
// Sync returns only once both have applied what was published, so a search
// finds it whichever holder the queue group picks.
func TestRemoteSyncWaitsForEveryReplica(t *testing.T) {
	s := natstest.Server(t)
	nodes := replicaGroup(t, s, "w1", "w2")
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, js, nodes, nil)
	m := openRemote(t, s, time.Second)
	namespaces := testNamespaces(24)
	publishRound(t, js, namespaces, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Sync(ctx, client.SyncRequest{}); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	for _, ns := range namespaces {
		for range 4 { // some reach each holder
			if !searchText(t, m, ns, replicaText(ns, 1)) {
				t.Fatalf("search %s right after Sync misses %q", ns, replicaText(ns, 1))
			}
		}
	}
}

// TestRemoteWithoutAWorker: on a server with no worker, every call fails at
// once with ErrNoWorker (Sync too, rather than polling until the
// deadline); with the connection down, with ErrUnavailable.
func TestRemoteWithoutAWorker(t *testing.T) {
	s := natstest.Server(t)
	m := openRemote(t, s, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	calls := map[string]func() error{
		"Status":          func() error { _, err := m.Status(ctx); return err },
		"Sync":            func() error { return m.Sync(ctx, client.SyncRequest{}) },
		"ProbeEmbeddings": func() error { return m.ProbeEmbeddings(ctx) },
		"ProbeVectors":    func() error { return m.ProbeVectors(ctx) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, client.ErrNoWorker) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s() with no worker = %v, want ErrNoWorker at once", name, err)
		}
	}

	s.Shutdown()
	s.WaitForShutdown()
	for name, call := range calls {
		var err error
		waitUntil(t, 10*time.Second, name+" to see the connection down", func() bool {
			err = call()
			return errors.Is(err, memindex.ErrUnavailable)
		})
		if errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "nats connection is") {
			t.Errorf("%s() with the connection down = %v, want ErrUnavailable saying so, at once", name, err)
		}
	}
}

// TestRemoteProbes: a ready worker with the built-in embedder passes both
// probes. A worker whose provider (an OpenAI-speaking server answering 503)
// is down fails ProbeEmbeddings, naming the worker and its open breaker,
// while ProbeVectors passes: its vector index answers, and the embeddings
// probe is the one that says queries cannot be embedded. A worker that is
// up but not consuming (not ready) fails both with ErrNoWorker.
func TestRemoteProbes(t *testing.T) {
	ctx := context.Background()
	t.Run("ready built-in", func(t *testing.T) {
		s := natstest.Server(t)
		staticWorker(t, s, "w1", nil)
		m := openRemote(t, s, time.Second)
		if err := m.ProbeEmbeddings(ctx); err != nil {
			t.Errorf("ProbeEmbeddings() = %v, want nil", err)
		}
		if err := m.ProbeVectors(ctx); err != nil {
			t.Errorf("ProbeVectors() = %v, want nil", err)
		}
	})

	t.Run("provider down", func(t *testing.T) {
		provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/embeddings") || r.Method != http.MethodPost {
				t.Errorf("provider request %s %s, want POST .../embeddings", r.Method, r.URL.Path)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
		}))
		defer provider.Close()
		s := natstest.Server(t)
		staticWorker(t, s, "down-1", func(c *Config) {
			c.Embedder = embedder.ProviderConfig{Name: "openai", BaseURL: provider.URL, Model: "local-test", Dims: 16, Timeout: time.Second, Retries: -1}
			c.Breaker = embedder.BreakerConfig{Failures: 1, Cooldown: time.Hour} // stays open for the test
		})
		m := openRemote(t, s, time.Second)
		js, err := jetstream.New(natstest.Connect(t, s))
		if err != nil {
			t.Fatal(err)
		}
		publishRound(t, js, testNamespaces(1), 1) // its embedding fails: the breaker opens
		waitUntil(t, 30*time.Second, "the worker's breaker to open", func() bool {
			sts, err := m.Status(ctx)
			return err == nil && len(sts) == 1 && sts[0].Embedder.Breaker == embedder.BreakerOpen
		})
		err = m.ProbeEmbeddings(ctx)
		if !errors.Is(err, memindex.ErrUnavailable) || !strings.Contains(err.Error(), "down-1") || !strings.Contains(err.Error(), "breaker open") {
			t.Errorf("ProbeEmbeddings() with the provider down = %v; want ErrUnavailable naming worker down-1 and its open breaker", err)
		}
		if err := m.ProbeVectors(ctx); err != nil {
			t.Errorf("ProbeVectors() with the provider down = %v, want nil (the vector index answers)", err)
		}
	})

	t.Run("not ready", func(t *testing.T) {
		s := natstest.Server(t)
		cfg := testConfig(t.TempDir())
		cfg.NATS.Server, cfg.Worker, cfg.PartitionCount = s.ClientURL(), "idle", replicaPartitions
		n, err := Open(ctx, cfg, slog.New(slog.DiscardHandler)) // started, never run: serves, consumes nothing
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = n.Close(context.Background()) })
		m := openRemote(t, s, time.Second)
		if sts, err := m.Status(ctx); err != nil || len(sts) != 1 || sts[0].Ready {
			t.Fatalf("Status() = %+v, %v; want the idle worker, not ready", sts, err)
		}
		for name, probe := range map[string]func(context.Context) error{"ProbeEmbeddings": m.ProbeEmbeddings, "ProbeVectors": m.ProbeVectors} {
			if err := probe(ctx); !errors.Is(err, client.ErrNoWorker) || !strings.Contains(err.Error(), "no ready worker") {
				t.Errorf("%s() with only a worker that is not ready = %v, want ErrNoWorker saying no worker is ready", name, err)
			}
		}
	})
}
