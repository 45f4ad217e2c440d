package client_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"memindex"
	"memindex/client"
	"memindex/query"
)

// The manager over the local backend (query.Local, real shard files):
// the fallback opens lazily, and the Cache shares and evicts.

// TestFallbackOpensLazily: the fallback is opened on first need only, and
// a primary that cannot be opened sends everything to it with the reason.
func TestFallbackOpensLazily(t *testing.T) {
	ctx := context.Background()
	dir := writeTestShards(t)
	m, err := client.Open(ctx, client.Config{Backend: client.BackendLocal, Local: client.LocalConfig{Path: dir, Opener: query.Local{}},
		Fallback: &client.Config{Backend: client.BackendLocal + "x"}})
	if err == nil {
		m.Close(ctx)
		t.Fatal("Open with an unknown fallback backend succeeded, want a config error")
	}
	m, err = client.Open(ctx, client.Config{Backend: client.BackendLocal, Local: client.LocalConfig{Path: dir, Opener: query.Local{}}, Fallback: &client.Config{Backend: client.BackendNone}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer m.Close(ctx)
	if _, err := m.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon"}); err != nil {
		t.Fatalf("Search: %v", err)
	}
	if client.FallbackOpened(m) {
		t.Fatal("the fallback was opened although the primary answered")
	}
	bad, err := client.Open(ctx, client.Config{Backend: client.BackendLocal, Local: client.LocalConfig{Path: t.TempDir(), Opener: query.Local{}},
		Fallback: &client.Config{Backend: client.BackendQMD, QMD: client.QMDConfig{Command: client.StandInQMD(t)}}})
	if err != nil {
		t.Fatalf("Open with a primary that cannot open: %v, want the fallback to serve", err)
	}
	defer bad.Close(ctx)
	resp, err := bad.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon"})
	if err != nil || resp.Backend != client.BackendQMD || resp.Fallback == nil || !strings.Contains(resp.Fallback.Reason, "could not be opened") {
		t.Fatalf("Search()=%+v, %v, want qmd answering for local that could not be opened", resp.Fallback, err)
	}
}

// TestCacheSharesAndEvicts: concurrent Opens of one configuration get one
// manager; a manager whose primary failed (the fallback answered) is
// evicted, and the next Open opens a new one.
func TestCacheSharesAndEvicts(t *testing.T) {
	ctx := context.Background()
	data := writeTestShards(t)
	c := client.NewCache()
	defer c.Close(ctx)

	good := client.Config{Backend: client.BackendLocal, Local: client.LocalConfig{Path: data, Opener: query.Local{}}}
	var wg sync.WaitGroup
	ms := make([]client.Manager, 8)
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
		if m == nil || client.Shared(m) != client.Shared(ms[0]) {
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
	failing := client.Config{Backend: client.BackendRemote, Remote: client.RemoteConfig{URL: "nats://127.0.0.1:1"},
		Fallback: &client.Config{Backend: client.BackendLocal, Local: client.LocalConfig{Path: data, Opener: query.Local{}}}}
	m1, err := c.Open(ctx, failing)
	mustTB(t, err)
	defer m1.Close(ctx)
	resp, err := m1.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon"})
	if err != nil || resp.Backend != client.BackendLocal || resp.Fallback == nil {
		t.Fatalf("Search()=backend %q fallback %+v, %v, want the local fallback", resp.Backend, resp.Fallback, err)
	}
	if c.Len() != 1 {
		t.Fatalf("Len()=%d after the primary failed, want 1 (the failed one evicted)", c.Len())
	}
	m2, err := c.Open(ctx, failing)
	mustTB(t, err)
	defer m2.Close(ctx)
	if client.Shared(m2) == client.Shared(m1) {
		t.Fatal("Open after the primary failed returned the evicted manager, want a new one that retries the primary")
	}
	// The evicted manager still serves its holder until it closes it.
	if _, err := m1.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon"}); err != nil {
		t.Fatalf("Search on the evicted manager: %v", err)
	}
}
