package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"memindex"
	"memindex/client"
	"memindex/internal/corpus"
	"memindex/query"
)

// Search paths of the cluster suite (cluster.go): direct and routed.

// Search paths of the cluster suite.
const (
	PathDirect       = "direct"
	PathRoutedHolder = "routed-holder"
	PathRoutedRelay  = "routed-relayed"
)

// ClusterSearchFigure is the latency of one search path.
type ClusterSearchFigure struct {
	Workers int     `json:"workers"`
	Chunks  int     `json:"chunks"`
	Mode    string  `json:"mode"`
	Path    string  `json:"path"`
	Queries int     `json:"queries"`
	P50Ms   float64 `json:"p50Ms"`
	P90Ms   float64 `json:"p90Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
	// RelayedBy counts the relayed replies by the worker their
	// Memindex-Forwarded-By header names.
	RelayedBy map[string]int `json:"relayedBy,omitempty"`
	// Received is how many timed searches the memindex.search endpoints of
	// this path's workers (the holder; the others) counted in their micro
	// stats: it equals Queries when the header told the paths apart right.
	Received int `json:"received,omitempty"`
}

// search fills namespace ns with size chunks in its holder's shard, then
// sends queries one at a time three ways: direct (the Go client, knowing
// P) and routed (`nats req` on memindex.search.<ns>, whichever worker the
// queue group picks), the latter split by the Memindex-Forwarded-By header.
// Each query goes both ways, in alternating order, so the machine's load
// falls on both alike.
func (c *benchCluster) search(ctx context.Context, ns string, size, queries int) ([]ClusterSearchFigure, error) {
	P := memindex.DefaultPartitions
	p := memindex.Partition(ns, P)
	holder := -1
	for i, n := range c.nodes {
		if n.Holds(p) {
			holder = i
		}
	}
	if holder < 0 {
		return nil, fmt.Errorf("no worker serves partition %d of namespace %s", p, ns)
	}
	if err := fillNamespace(ctx, c.nodes[holder], ns, size, nil); err != nil {
		return nil, err
	}
	nc, err := nats.Connect(c.srv.ClientURL(), nats.Name("memindex bench searcher"))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	cl := client.NewClient(nc)
	cl.UsePartitions(P)
	const mode = "hybrid"
	direct := func(q string) (float64, error) {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		t0 := time.Now()
		_, err := cl.Search(qctx, memindex.SearchRequest{Namespace: ns, Query: q, K: 10, Mode: mode})
		return float64(time.Since(t0).Nanoseconds()) / 1e6, err
	}
	// routed does what Client.Search does (encode, request, decode), on
	// the subject `nats req` uses, so the two paths time the same work.
	routed := func(q string) (float64, string, error) {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		t0 := time.Now()
		data, err := json.Marshal(memindex.SearchRequest{Namespace: ns, Query: q, K: 10, Mode: mode})
		if err != nil {
			return 0, "", err
		}
		msg, err := nc.RequestWithContext(qctx, memindex.SearchSubject(ns), data)
		if err != nil {
			return 0, "", err
		}
		if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
			return 0, "", fmt.Errorf("routed search: %s %s", code, msg.Header.Get(micro.ErrorHeader))
		}
		var resp memindex.SearchResponse
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return 0, "", fmt.Errorf("routed search: decode response: %w", err)
		}
		return float64(time.Since(t0).Nanoseconds()) / 1e6, msg.Header.Get(memindex.HeaderForwardedBy), nil
	}
	g := corpus.New(7)
	const warmups = 20
	for i := range warmups { // warm up caches on both paths
		q := g.Query(i%2 == 0)
		if _, err := direct(q); err != nil {
			return nil, fmt.Errorf("warm-up search: %w", err)
		}
		if _, _, err := routed(q); err != nil {
			return nil, fmt.Errorf("warm-up search: %w", err)
		}
	}
	// micro counts a request after its handler returns, and the search
	// handler returns after handing the search to the pool, so the last
	// warm-up search's reply can arrive before it is counted: wait for the
	// counts to reach the routed requests sent so far.
	before, err := settledSearches(ctx, nc, len(c.nodes), warmups)
	if err != nil {
		return nil, err
	}
	lat := map[string][]float64{}
	relayedBy := map[string]int{}
	for i := range queries {
		q := g.Query(i%2 == 0)
		for k := range 2 {
			// Which path goes first changes every two queries, so that
			// neither always gets the query embedding cached by the
			// other, nor one kind of query (i%2) more than the other.
			if (i/2+k)%2 == 0 {
				el, err := direct(q)
				if err != nil {
					return nil, fmt.Errorf("direct search %q: %w", q, err)
				}
				lat[PathDirect] = append(lat[PathDirect], el)
				continue
			}
			el, by, err := routed(q)
			if err != nil {
				return nil, fmt.Errorf("routed search %q: %w", q, err)
			}
			if by == "" {
				lat[PathRoutedHolder] = append(lat[PathRoutedHolder], el)
			} else {
				lat[PathRoutedRelay] = append(lat[PathRoutedRelay], el)
				relayedBy[by]++
			}
		}
	}
	after, err := settledSearches(ctx, nc, len(c.nodes), warmups+queries)
	if err != nil {
		return nil, err
	}
	received := map[string]int{}
	for i, name := range c.names {
		path := PathRoutedRelay
		if i == holder {
			path = PathRoutedHolder
		}
		received[path] += after[name] - before[name]
	}
	var out []ClusterSearchFigure
	for _, path := range []string{PathDirect, PathRoutedHolder, PathRoutedRelay} {
		l := lat[path]
		slices.Sort(l)
		f := ClusterSearchFigure{Workers: len(c.nodes), Chunks: size, Mode: mode, Path: path, Queries: len(l),
			P50Ms: benchPercentile(l, 0.50), P90Ms: benchPercentile(l, 0.90), P99Ms: benchPercentile(l, 0.99), Received: received[path]}
		if len(l) > 0 {
			f.MaxMs = l[len(l)-1]
		}
		if path == PathRoutedRelay {
			f.RelayedBy = relayedBy
		}
		out = append(out, f)
	}
	return out, nil
}

// settledSearches is endpointSearches once the workers' counts add up to
// total (2 s at most; then as they are: the caller's cross-check shows
// the difference).
func settledSearches(ctx context.Context, nc *nats.Conn, workers, total int) (map[string]int, error) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		got, err := endpointSearches(ctx, nc, workers)
		if err != nil {
			return nil, err
		}
		sum := 0
		for _, n := range got {
			sum += n
		}
		if sum >= total || time.Now().After(deadline) {
			return got, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// endpointSearches asks every instance of the memindex micro service for
// its stats and returns the requests its search endpoint received, by
// worker; it waits for want answers (2 s at most).
func endpointSearches(ctx context.Context, nc *nats.Conn, want int) (map[string]int, error) {
	subject, err := micro.ControlSubject(micro.StatsVerb, memindex.ServiceName, "")
	if err != nil {
		return nil, err
	}
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe() //nolint:errcheck // nothing to do about it
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out := map[string]int{}
	for len(out) < want {
		m, err := sub.NextMsgWithContext(wctx)
		if err != nil {
			return nil, fmt.Errorf("service stats: %d of %d workers answered: %w", len(out), want, err)
		}
		var st micro.Stats
		if err := json.Unmarshal(m.Data, &st); err != nil {
			return nil, fmt.Errorf("service stats: %w", err)
		}
		for _, e := range st.Endpoints {
			if e.Name == query.EndpointSearch {
				out[st.Metadata["worker"]] = e.NumRequests
			}
		}
	}
	return out, nil
}
