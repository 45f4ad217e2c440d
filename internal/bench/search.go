package bench

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
	"memindex/embedder"
	"memindex/internal/corpus"
	"memindex/internal/eval"
	"memindex/internal/harness"
	"memindex/store"
)

// The search suite fills one namespace of size generated chunks and asks
// the same generated queries, one request at a time, of memindex over NATS
// in each mode and, in the same run and over the same chunks, of the two
// floors in process: plain FTS5 bm25 over the chunk texts (one row a
// chunk, the shard's tokenizer) and a plain float32 scan of their vectors
// (one goroutine, a plain Go loop, as the locomo suite's). The systems take
// turns query by query, each query starting with another one, so load on
// the box falls on all of them alike. Then the shard's start-up: its file
// opened afresh, read-only beside the node, timed until Open returns (the
// vectors are in memory) and until the keyword index is, with the Go heap
// the open shard holds.

// The floors' names in SearchFigure.Mode.
const (
	SearchFloorFTS5 = "floor: FTS5 bm25"
	SearchFloorScan = "floor: float32 scan"
)

// StartupFigure is the start-up of the shard that holds a search namespace.
type StartupFigure struct {
	// Chunks is the search namespace's size; ShardChunks every chunk of the
	// shard file (other suites' namespaces may share it).
	Chunks      int   `json:"chunks"`
	ShardChunks int64 `json:"shardChunks"`
	// OpenSeconds is until store.Open returned (vector index loaded);
	// KeywordSeconds until the keyword index was in memory (a shard of more
	// than 20,000 chunks builds it in the background, FTS5 ranking
	// meanwhile).
	OpenSeconds    float64 `json:"openSeconds"`
	KeywordSeconds float64 `json:"keywordSeconds"`
	// HeapBytes is the Go heap the open shard holds (after a GC, less the
	// heap before Open).
	HeapBytes int64 `json:"heapBytes"`
}

// searchFloors holds the floors' copy of a search namespace.
type searchFloors struct {
	fts  *sql.DB
	vecs []float32 // vecDims a chunk, in fill order
}

// openSearchFloors creates the FTS5 floor's file at path.
func openSearchFloors(ctx context.Context, path string, size int) (*searchFloors, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=OFF&_synchronous=OFF")
	if err != nil {
		return nil, fmt.Errorf("search floor: %w", err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE floor USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')`); err != nil {
		db.Close()
		return nil, fmt.Errorf("search floor: %w", err)
	}
	return &searchFloors{fts: db, vecs: make([]float32, 0, size*vecDims)}, nil
}

// add indexes one fill batch, one transaction.
func (f *searchFloors) add(ctx context.Context, texts []string, vecs [][]float32) error {
	tx, err := f.fts.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("search floor: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	st, err := tx.PrepareContext(ctx, `INSERT INTO floor(body) VALUES (?)`)
	if err != nil {
		return fmt.Errorf("search floor: %w", err)
	}
	for _, t := range texts {
		if _, err := st.ExecContext(ctx, t); err != nil {
			return fmt.Errorf("search floor: %w", err)
		}
	}
	for _, v := range vecs {
		f.vecs = append(f.vecs, v[:vecDims]...)
	}
	return tx.Commit()
}

// keyword is the FTS5 floor's top 10 for query: the number of hits.
func (f *searchFloors) keyword(ctx context.Context, query string) (int, error) {
	match := eval.MatchQuery(eval.Words(query))
	if match == "" {
		return 0, nil
	}
	rows, err := f.fts.QueryContext(ctx, `SELECT rowid FROM floor WHERE floor MATCH ? ORDER BY rank LIMIT ?`, match, vecK)
	if err != nil {
		return 0, fmt.Errorf("search floor: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

// runSearchSize runs the search (and concurrency) suites at one namespace
// size.
func runSearchSize(ctx context.Context, cfg Config, run map[string]bool, n harness.Node, size int, rep *Report) error {
	say := cfg.Log
	ns := fmt.Sprintf("bench-search-%d", size)
	var floors *searchFloors
	var sink func([]string, [][]float32) error
	if run["search"] {
		var err error
		if floors, err = openSearchFloors(ctx, filepath.Join(cfg.Dir, fmt.Sprintf("search-floor-%d.db", size)), size); err != nil {
			return err
		}
		defer floors.fts.Close()
		sink = func(texts []string, vecs [][]float32) error { return floors.add(ctx, texts, vecs) }
	}
	say("search: filling namespace %s with %d chunks (and the floors) …", ns, size)
	if err := fillNamespace(ctx, n, ns, size, sink); err != nil {
		return err
	}
	if run["search"] {
		slow, err := startSlowTracer(cfg.SlowTraceDir, cfg.SlowTraceMs, say)
		if err != nil {
			return err
		}
		figs, err := runSearch(ctx, n, ns, size, cfg.Modes, cfg.Queries, floors, slow)
		slow.stop()
		if err != nil {
			return err
		}
		rep.Search = append(rep.Search, figs...)
		for _, f := range figs {
			say("  %d chunks, %s: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms over %d queries (%d degraded); %.2f ms of CPU and %.1f page faults a query", size, f.Mode, f.P50Ms, f.P90Ms, f.P99Ms, f.Queries, f.Degraded, f.CPUMsPerQuery, f.FaultsPerQuery)
			if w := f.Worker; w != nil {
				say("    the worker's own time: p50 %.2f ms, p99 %.2f ms (legs side by side, p50: vector %.2f, keyword %.2f)", w.P50Ms, w.P99Ms, w.VectorP50Ms, w.KeywordP50Ms)
			}
			if t := f.Tail; t != nil {
				say("    its slowest %d: %.2f ms on average; the worker took %.2f (vector leg %.2f, keyword leg %.2f)", t.Queries, t.ClientMs, t.WorkerMs, t.VectorMs, t.KeywordMs)
			}
		}
		floors.vecs = nil
		st, err := measureStartup(ctx, n, ns, size)
		if err != nil {
			return err
		}
		rep.Startup = append(rep.Startup, st)
		say("  start-up of its shard (%d chunks): Open %.2f s, keyword index in memory %.2f s, heap %s", st.ShardChunks, st.OpenSeconds, st.KeywordSeconds, benchBytes(st.HeapBytes))
	}
	if run["concurrency"] {
		for _, c := range cfg.Clients {
			fig, err := runConcurrency(ctx, n.URL(), ns, size, "hybrid", c, cfg.ConcurrencyDuration)
			if err != nil {
				return err
			}
			rep.Concurrency = append(rep.Concurrency, fig)
			say("  %d chunks, %d clients: %.0f queries/s, p50 %.2f ms, p99 %.2f ms (%d queries, %d errors)", size, c, fig.PerSecond, fig.P50Ms, fig.P99Ms, fig.Queries, fig.Errors)
		}
	}
	return nil
}

// searchSystem is one of the systems the search suite times.
type searchSystem struct {
	name     string
	ask      func(ctx context.Context, q string, qv []float32) (searchAnswer, error)
	lat      []float64
	answers  []timedAnswer // memindex's, for the tail
	spent    time.Duration // timed answers so far
	used     usage         // the process's CPU and page faults over the timed answers
	budget   time.Duration // 0: every query; else asked no more once spent (after 3)
	degraded int
}

// searchAnswer is what an answer said about itself: whether it was
// degraded and, from memindex, how long the worker and its legs took.
type searchAnswer struct {
	degraded                      bool
	worker                        bool
	workerMs, vectorMs, keywordMs float64
}

// searchWorker is the percentiles of the worker's own times of as, nil
// when they are not the worker's.
func searchWorker(as []timedAnswer) *SearchWorker {
	if len(as) == 0 || !as[0].worker {
		return nil
	}
	pct := func(get func(a timedAnswer) float64, p float64) float64 {
		xs := make([]float64, len(as))
		for i, a := range as {
			xs[i] = get(a)
		}
		slices.Sort(xs)
		return benchPercentile(xs, p)
	}
	took := func(a timedAnswer) float64 { return a.workerMs }
	return &SearchWorker{P50Ms: pct(took, 0.50), P99Ms: pct(took, 0.99),
		VectorP50Ms:  pct(func(a timedAnswer) float64 { return a.vectorMs }, 0.50),
		KeywordP50Ms: pct(func(a timedAnswer) float64 { return a.keywordMs }, 0.50)}
}

// timedAnswer is an answer with the client's time for it.
type timedAnswer struct {
	searchAnswer
	clientMs float64
}

// searchTail is the mean of the slowest 1 % of as (at least one), nil when
// they are not the worker's.
func searchTail(as []timedAnswer) *SearchTail {
	if len(as) == 0 || !as[0].worker {
		return nil
	}
	as = slices.Clone(as)
	slices.SortFunc(as, func(a, b timedAnswer) int { return cmp.Compare(b.clientMs, a.clientMs) })
	n := max(1, len(as)/100)
	t := &SearchTail{Queries: n}
	for _, a := range as[:n] {
		t.ClientMs += a.clientMs / float64(n)
		t.WorkerMs += a.workerMs / float64(n)
		t.VectorMs += a.vectorMs / float64(n)
		t.KeywordMs += a.keywordMs / float64(n)
	}
	return t
}

// searchFloorBudget bounds each floor's timed answers at one size: plain
// FTS5 ranks every row matching any term of a question, seconds each at
// 1,000,000 chunks, so a slow floor answers fewer questions (at least 3,
// the count in its figure) instead of holding the run for many minutes.
const searchFloorBudget = 60 * time.Second

// runSearch asks queries (after 20 warm-up ones) of memindex over NATS in
// each mode and of the floors (each within searchFloorBudget), taking
// turns, and reports each system's latency percentiles as its caller sees
// them.
// slow, when not nil, writes a trace after each slow memindex answer.
func runSearch(ctx context.Context, n harness.Node, ns string, size int, modes []string, queries int, floors *searchFloors, slow *slowTracer) ([]SearchFigure, error) {
	nc, err := nats.Connect(n.URL())
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	cl := client.NewClient(nc)
	var systems []*searchSystem
	for _, mode := range modes {
		systems = append(systems, &searchSystem{name: mode, ask: func(ctx context.Context, q string, _ []float32) (searchAnswer, error) {
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			resp, err := cl.Search(qctx, memindex.SearchRequest{Namespace: ns, Query: q, K: vecK, Mode: mode})
			if err != nil {
				return searchAnswer{}, fmt.Errorf("search %q (%s): %w", q, mode, err)
			}
			return searchAnswer{degraded: len(resp.Degraded) > 0, worker: true, workerMs: resp.TookMs,
				vectorMs: resp.Legs.Vector.TookMs, keywordMs: resp.Legs.Keyword.TookMs}, nil
		}})
	}
	systems = append(systems,
		&searchSystem{name: SearchFloorFTS5, budget: searchFloorBudget, ask: func(ctx context.Context, q string, _ []float32) (searchAnswer, error) {
			_, err := floors.keyword(ctx, q)
			return searchAnswer{}, err
		}},
		&searchSystem{name: SearchFloorScan, budget: searchFloorBudget, ask: func(_ context.Context, _ string, qv []float32) (searchAnswer, error) {
			scanFloat32(qv, floors.vecs)
			return searchAnswer{}, nil
		}},
	)
	emb := n.Embedder()
	g := corpus.New(7)
	for i := 0; i < queries+20; i++ {
		q := g.Query(i%2 == 0)
		qv, err := emb.Embed(ctx, embedder.Request{Texts: []string{q}, Kind: embedder.KindQuery})
		if err != nil {
			return nil, err
		}
		for j := range systems {
			s := systems[(i+j)%len(systems)]
			if s.budget > 0 && s.spent >= s.budget && len(s.lat) >= 3 {
				continue
			}
			u0, t0 := processUsage(), time.Now()
			a, err := s.ask(ctx, q, qv[0])
			el, u := time.Since(t0), processUsage().since(u0)
			if err != nil {
				return nil, err
			}
			if i < 20 { // the first 20 warm up caches
				continue
			}
			if a.worker {
				if err := slow.after(fmt.Sprintf("%d-%s", size, s.name), durMs(el), a); err != nil {
					return nil, err
				}
			}
			s.lat, s.spent = append(s.lat, durMs(el)), s.spent+el
			s.used.cpu, s.used.faults = s.used.cpu+u.cpu, s.used.faults+u.faults
			s.answers = append(s.answers, timedAnswer{a, durMs(el)})
			if a.degraded {
				s.degraded++
			}
		}
	}
	out := make([]SearchFigure, 0, len(systems))
	for _, s := range systems {
		slices.Sort(s.lat)
		out = append(out, SearchFigure{Chunks: size, Mode: s.name, Queries: len(s.lat), P50Ms: benchPercentile(s.lat, 0.50), P90Ms: benchPercentile(s.lat, 0.90),
			P99Ms: benchPercentile(s.lat, 0.99), MaxMs: s.lat[len(s.lat)-1], Degraded: s.degraded, Tail: searchTail(s.answers), Worker: searchWorker(s.answers),
			CPUMsPerQuery: durMs(s.used.cpu) / float64(len(s.lat)), FaultsPerQuery: float64(s.used.faults) / float64(len(s.lat))})
	}
	return out, nil
}

// measureStartup opens the file of the shard that holds ns afresh,
// read-only beside the node, and times its start-up.
func measureStartup(ctx context.Context, n harness.Node, ns string, size int) (StartupFigure, error) {
	sh := n.Shards()[memindex.Partition(ns, n.Partitions())]
	if sh == nil {
		return StartupFigure{}, fmt.Errorf("start-up: the node holds no shard of %s", ns)
	}
	var before, after runtime.MemStats
	// Twice: the first collection moves the sync.Pools' contents (the
	// searches' scratch) to their victim caches, the second frees them, as
	// the collection after the Open would, which made a small shard's
	// figure negative.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	ro, err := store.Open(ctx, sh.Path(), store.Config{Dims: vecDims, ReadOnly: true})
	if err != nil {
		return StartupFigure{}, fmt.Errorf("start-up: %w", err)
	}
	defer ro.Close(ctx) //nolint:errcheck // read-only: nothing to lose
	fig := StartupFigure{Chunks: size, OpenSeconds: time.Since(t0).Seconds()}
	for {
		st, err := ro.Stats(ctx)
		if err != nil {
			return StartupFigure{}, fmt.Errorf("start-up: %w", err)
		}
		if st.KeywordIndex == "memory" {
			fig.KeywordSeconds, fig.ShardChunks = time.Since(t0).Seconds(), st.Chunks
			break
		}
		if st.KeywordIndex != "fts5: keyword index loading" {
			return StartupFigure{}, fmt.Errorf("start-up: the keyword index did not load: %s", st.KeywordIndex)
		}
		select {
		case <-ctx.Done():
			return StartupFigure{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	fig.HeapBytes = int64(after.HeapAlloc) - int64(before.HeapAlloc)
	return fig, nil
}
