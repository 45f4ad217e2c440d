package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/embedder"
	"memindex/internal/corpus"
	"memindex/node"
	"memindex/query"
	"memindex/store"
)

// benchReport is what bench measures; --json prints it, and it is written
// to report.json in --out.
type benchReport struct {
	Date        string              `json:"date"`
	Machine     string              `json:"machine"`
	Command     string              `json:"command"`
	Ingest      []ingestFigure      `json:"ingest,omitempty"`
	Stages      []stageFigure       `json:"stages,omitempty"`
	Hot         []hotFigure         `json:"hot,omitempty"` // bench_hot.go
	Search      []searchFigure      `json:"search,omitempty"`
	Concurrency []concurrencyFigure `json:"concurrency,omitempty"`
	Vector      []vectorFigure      `json:"vector,omitempty"`
	Cluster     *clusterReport      `json:"cluster,omitempty"` // bench_cluster.go
	Locomo      *locomoReport       `json:"locomo,omitempty"`  // bench_locomo.go
}

type ingestFigure struct {
	Corpus    string  `json:"corpus"`
	Messages  int     `json:"messages"`
	Chunks    int64   `json:"chunks"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"messagesPerSecond"`
}

type searchFigure struct {
	Chunks  int     `json:"chunks"`
	Mode    string  `json:"mode"`
	Queries int     `json:"queries"`
	P50Ms   float64 `json:"p50Ms"`
	P90Ms   float64 `json:"p90Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
	// Degraded counts responses that flagged a leg missing or partial.
	Degraded int `json:"degraded"`
}

// benchSuites are the parts of the bench, in the order they run.
var benchSuites = []string{"ingest", "hot", "stages", "search", "concurrency", "vector", "locomo", "cluster"}

// defaultBenchSuites run when --suite is not given: cluster, which starts
// several workers per run, runs only when asked; locomo only when its files
// exist.
var defaultBenchSuites = []string{"ingest", "hot", "stages", "search", "concurrency", "vector", "locomo"}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", "[flags]")
	suite := fs.String("suite", env("MEMINDEX_BENCH_SUITE", strings.Join(defaultBenchSuites, ",")), "parts to run, comma-separated: "+strings.Join(benchSuites, ", ")+" (cluster only when named)")
	locomo := fs.String("locomo", env("MEMINDEX_LOCOMO", "../shared/eval-data/locomo/locomo10.events.jsonl"), "LoCoMo events file (the locomo suite also reads the .queries.jsonl beside it); skipped when absent")
	messages := fs.Int("messages", 100000, "messages in the generated ingest corpus (ingest and stages suites; 0 skips it)")
	hotMessages := fs.Int("hot-messages", 100000, "hot suite: messages into one namespace (and, beside it, spread over 100 namespaces); 0 skips it")
	hotSessions := fs.Int("hot-sessions", 1000, "hot suite: interleaved sessions of the one namespace")
	sizes := fs.String("search-chunks", "10000,100000", "namespace sizes (chunks) to measure search latency and concurrency at over NATS; empty skips")
	queries := fs.Int("queries", 400, "search requests per size and mode (cluster suite: per path)")
	modes := fs.String("modes", "hybrid,keyword,vector", "search modes to measure (search and locomo suites)")
	clients := fs.String("clients", "1,8,64", "concurrency suite: numbers of concurrent NATS clients")
	concDur := fs.Duration("concurrency-duration", 5*time.Second, "concurrency suite: how long each number of clients searches")
	vecSizes := fs.String("sizes", env("MEMINDEX_BENCH_SIZES", "10000,100000"), "vector suite: corpus sizes (vectors), e.g. 10000,100000,1000000")
	vecQueries := fs.Int("vector-queries", 200, "vector suite: timed queries per variant and size")
	vecBudget := fs.Duration("vector-budget", 60*time.Second, "vector suite: time budget of one variant's timed queries at one size; a slower variant runs fewer queries (at least 3)")
	out := fs.String("out", env("MEMINDEX_BENCH_OUT", "bench-out"), "directory for report.json, tables.md and growth.png (and the vector data cache when --data is not set)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	keep := fs.String("data", "", "data directory (default: a temporary one, removed afterwards; the vector suite caches its files under it, or under --out/cache)")
	cache := fs.String("cache", "", "vector suite: directory of its cached data files (default: vector-cache under --data, else cache under --out)")
	render := fs.String("render", "", "measure nothing: merge these report.json files (comma-separated) and write their tables and plot to --out")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	clusterF := registerClusterFlags(fs)
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if *render != "" {
		return renderReports(strings.Split(*render, ","), *out, stdout)
	}
	run := map[string]bool{}
	for _, s := range strings.Split(*suite, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(benchSuites, s) {
			return fmt.Errorf("--suite: unknown part %q; use a comma-separated list of %s", s, strings.Join(benchSuites, ", "))
		}
		run[s] = true
	}
	searchSizes, err := parseSizes("--search-chunks", *sizes)
	if err != nil {
		return err
	}
	vectorSizes, err := parseSizes("--sizes", *vecSizes)
	if err != nil {
		return err
	}
	levels, err := parseSizes("--clients", *clients)
	if err != nil {
		return err
	}
	clusterCfg, err := clusterF.config(*queries)
	if err != nil {
		return err
	}
	if *hotSessions < 1 {
		return fmt.Errorf("--hot-sessions %d: want at least 1", *hotSessions)
	}
	if *vecQueries < 1 {
		return fmt.Errorf("--vector-queries %d: want at least 1", *vecQueries)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	dir := *keep
	cacheDir := filepath.Join(*out, "cache")
	if dir == "" {
		d, err := os.MkdirTemp("", "memindex-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else {
		cacheDir = filepath.Join(dir, "vector-cache")
	}
	if *cache != "" {
		cacheDir = *cache
	}
	say := func(format string, a ...any) {
		if !*asJSON {
			fmt.Fprintf(stderr, format+"\n", a...)
		}
	}
	host, _ := os.Hostname()
	rep := benchReport{Date: time.Now().UTC().Format(time.RFC3339), Machine: machineLine(host),
		Command: "memindex bench " + strings.Join(args, " ")}

	if run["ingest"] || run["hot"] || run["search"] || run["concurrency"] {
		if err := benchNode(ctx, dir, run, say, &rep, nodeBench{locomo: *locomo, messages: *messages, sizes: searchSizes,
			hotMessages: *hotMessages, hotSessions: *hotSessions,
			queries: *queries, modes: *modes, clients: levels, concDur: *concDur}); err != nil {
			return err
		}
	}
	if run["stages"] && *messages > 0 {
		say("stages: %d generated messages, each stage timed on its own …", *messages)
		figs, err := benchStages(ctx, filepath.Join(dir, "stages"), *messages, say)
		if err != nil {
			return err
		}
		rep.Stages = figs
	}
	if run["vector"] {
		say("vector: %v vectors, %d queries per variant …", vectorSizes, *vecQueries)
		figs, err := runVectorSuite(ctx, vectorBenchConfig{Sizes: vectorSizes, Queries: *vecQueries, Budget: *vecBudget,
			MinQueries: min(3, *vecQueries), CacheDir: cacheDir, Seed: 42, Log: say})
		if err != nil {
			return err
		}
		rep.Vector = figs
	}
	if run["locomo"] {
		named := os.Getenv("MEMINDEX_BENCH_SUITE") != ""
		fs.Visit(func(f *flag.Flag) { named = named || f.Name == "suite" })
		if rep.Locomo, err = runLocomoSuite(ctx, locomoBenchConfig{Events: *locomo, Dir: filepath.Join(dir, "locomo"),
			Modes: splitModes(*modes), Required: named, Log: say}); err != nil {
			return err
		}
	}
	if run["cluster"] {
		clusterCfg.Dir, clusterCfg.Log = filepath.Join(dir, "cluster"), say
		if rep.Cluster, err = runClusterSuite(ctx, clusterCfg); err != nil {
			return err
		}
	}
	if err := writeBenchOutputs(*out, rep); err != nil {
		return err
	}
	say("wrote %s", strings.Join([]string{filepath.Join(*out, "report.json"), filepath.Join(*out, "tables.md"), filepath.Join(*out, "growth.png")}, ", "))
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeTables(stdout, rep)
}

// nodeBench is what the suites that need a running node measure.
type nodeBench struct {
	locomo   string
	messages int
	// hotMessages and hotSessions size the hot suite (bench_hot.go).
	hotMessages, hotSessions int
	sizes                    []int
	queries                  int
	modes                    string
	clients                  []int
	concDur                  time.Duration
}

// benchNode starts a node in process and runs the ingest, search and
// concurrency suites against it.
func benchNode(ctx context.Context, dir string, run map[string]bool, say func(string, ...any), rep *benchReport, nb nodeBench) error {
	n, err := node.Open(ctx, benchNodeConfig(filepath.Join(dir, "node")), slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(rctx) }()
	defer func() { stop(); <-done }()

	if run["ingest"] {
		if f, err := os.Open(nb.locomo); err == nil {
			var lines [][]byte
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				lines = append(lines, append([]byte(nil), sc.Bytes()...))
			}
			f.Close()
			say("ingest: LoCoMo, %d messages …", len(lines))
			fig, err := benchIngest(ctx, n, "locomo", lines, "bench-locomo")
			if err != nil {
				return err
			}
			rep.Ingest = append(rep.Ingest, fig)
			say("  %.0f messages/s (%.2fs, %d chunks)", fig.PerSecond, fig.Seconds, fig.Chunks)
		} else {
			say("ingest: LoCoMo skipped (%v)", err)
		}
		if nb.messages > 0 {
			lines := generatedEvents(nb.messages)
			say("ingest: generated, %d messages …", len(lines))
			fig, err := benchIngest(ctx, n, fmt.Sprintf("generated-%d", nb.messages), lines, "")
			if err != nil {
				return err
			}
			rep.Ingest = append(rep.Ingest, fig)
			say("  %.0f messages/s (%.2fs, %d chunks)", fig.PerSecond, fig.Seconds, fig.Chunks)
		}
	}
	if run["hot"] && nb.hotMessages > 0 {
		figs, err := benchHot(ctx, n, nb.hotMessages, nb.hotSessions, say)
		if err != nil {
			return err
		}
		say("hot: the floors, in process over the same %d messages …", nb.hotMessages)
		floors, err := benchHotFloors(ctx, filepath.Join(dir, "hot"), nb.hotMessages, nb.hotSessions, n.Config().Batch, say)
		if err != nil {
			return err
		}
		rep.Hot = append(figs, floors...)
	}
	if !run["search"] && !run["concurrency"] {
		return nil
	}
	for _, size := range nb.sizes {
		ns := fmt.Sprintf("bench-search-%d", size)
		say("search: filling namespace %s with %d chunks …", ns, size)
		if err := fillNamespace(ctx, n, ns, size); err != nil {
			return err
		}
		if run["search"] {
			for _, mode := range strings.Split(nb.modes, ",") {
				fig, err := benchSearch(ctx, n, ns, size, strings.TrimSpace(mode), nb.queries)
				if err != nil {
					return err
				}
				rep.Search = append(rep.Search, fig)
				say("  %d chunks, %s: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms over %d queries", size, mode, fig.P50Ms, fig.P90Ms, fig.P99Ms, fig.Queries)
			}
		}
		if run["concurrency"] {
			for _, c := range nb.clients {
				fig, err := benchConcurrency(ctx, n.URL(), ns, size, "hybrid", c, nb.concDur)
				if err != nil {
					return err
				}
				rep.Concurrency = append(rep.Concurrency, fig)
				say("  %d chunks, %d clients: %.0f queries/s, p50 %.2f ms, p99 %.2f ms (%d queries, %d errors)", size, c, fig.PerSecond, fig.P50Ms, fig.P99Ms, fig.Queries, fig.Errors)
			}
		}
	}
	return nil
}

// benchNodeConfig is the node every bench part that needs one starts:
// built-in embedder (384 dims), all partitions, data under data.
func benchNodeConfig(data string) node.Config {
	c := node.DefaultConfig()
	c.Listen, c.Data, c.PartitionCount, c.Worker, c.SearchPending = "127.0.0.1:-1", data, memindex.DefaultPartitions, "bench", 1024
	c.Embedder.Dims, c.HTTP, c.SnapshotInterval = 384, "off", 0
	return c
}

// parseSizes parses a comma-separated list of positive integers (empty: none).
func parseSizes(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive integer; give a comma-separated list such as 10000,100000", flag, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// machineLine describes the machine: host, OS/arch, CPUs and model, Go.
func machineLine(host string) string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %s/%s, %d CPUs (%s), %s, dot %s", host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model, runtime.Version(), store.DotKind())
}

// generatedEvents returns n message events spread over 100 namespaces and
// sessions of 100 messages.
func generatedEvents(n int) [][]byte { return generatedEventsIn("gen", n) }

// generatedEventsIn is generatedEvents in the namespaces <prefix>-00 to
// <prefix>-99.
func generatedEventsIn(prefix string, n int) [][]byte {
	g := corpus.New(42)
	out := make([][]byte, 0, n)
	for s := 0; len(out) < n; s++ {
		ns := fmt.Sprintf("%s-%02d", prefix, s%100)
		for _, m := range g.Session(fmt.Sprintf("chat-%d", s), "s1", min(100, n-len(out))) {
			b, _ := json.Marshal(memindex.Event{Type: memindex.TypeMessage, Namespace: ns, SessionKey: m.SessionKey,
				SessionID: m.SessionID, Seq: m.Seq, ID: m.ID, Speaker: m.Speaker, Text: m.Text,
				Timestamp: "2026-11-30T09:00:00Z"})
			out = append(out, b)
		}
	}
	return out
}

// benchIngest publishes lines and measures until every partition has applied
// them: messages per second from the first publish to the last commit. It
// waits on the worker's applied sequences (a counter in memory), not on
// counting the shards' rows, so waiting costs the ingest nothing.
func benchIngest(ctx context.Context, n *node.Node, name string, lines [][]byte, ns string) (ingestFigure, error) {
	before := totals(ctx, n)
	js, err := jetstream.New(n.Conn(), jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		return ingestFigure{}, err
	}
	start := time.Now()
	type sent struct {
		p   int
		ack jetstream.PubAckFuture
	}
	futures := make([]sent, 0, len(lines))
	for i, l := range lines {
		m, err := client.LineMsg(l, ns, false)
		if err != nil {
			return ingestFigure{}, err
		}
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			return ingestFigure{}, err
		}
		futures = append(futures, sent{p: partitionOfSubject(m.Subject, n.Partitions()), ack: f})
		if i%4096 == 4095 { // a window of acks in flight
			<-js.PublishAsyncComplete()
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return ingestFigure{}, ctx.Err()
	}
	last := map[int]uint64{} // partition -> the last stream sequence published to it
	for _, f := range futures {
		select {
		case a := <-f.ack.Ok():
			last[f.p] = max(last[f.p], a.Sequence)
		case err := <-f.ack.Err():
			return ingestFigure{}, fmt.Errorf("publish: %w", err)
		}
	}
	w := n.IngestWorker()
	for {
		done := true
		for p, seq := range last {
			if a, _ := w.Applied(p); a < seq {
				done = false
				break
			}
		}
		if done {
			el := time.Since(start).Seconds()
			t := totals(ctx, n)
			return ingestFigure{Corpus: name, Messages: len(lines), Chunks: t.chunks - before.chunks, Seconds: el, PerSecond: float64(len(lines)) / el}, nil
		}
		select {
		case <-ctx.Done():
			return ingestFigure{}, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

type total struct{ messages, chunks, waiting int64 }

func totals(ctx context.Context, n *node.Node) total {
	var t total
	for _, sh := range n.Shards() {
		if st, err := sh.Stats(ctx); err == nil {
			t.messages += st.Messages
			t.chunks += st.Chunks
			t.waiting += st.VectorsWaiting
		}
	}
	return t
}

// fillNamespace writes size generated chunks with vectors straight into the
// namespace's shard: search latency does not depend on how chunks arrived.
func fillNamespace(ctx context.Context, n *node.Node, ns string, size int) error {
	p := memindex.Partition(ns, n.Partitions())
	sh := n.Shards()[p]
	g := corpus.New(uint64(size))
	const per = 1000
	for off := 0; off < size; off += per {
		cnt := min(per, size-off)
		chunks := make([]store.Chunk, cnt)
		texts := make([]string, cnt)
		for i := range chunks {
			var b strings.Builder
			for l := 0; l < 10; l++ {
				fmt.Fprintf(&b, "%s: %s\n", g.Speakers[l%2], g.Sentence(12+l%3*8))
			}
			texts[i] = b.String()
			id := off + i
			chunks[i] = store.Chunk{ID: fmt.Sprintf("%s-%d", ns, id), Namespace: ns, Source: memindex.SourceSessions,
				SessionKey: fmt.Sprintf("chat-%d", id/50), SessionID: "s1", SeqStart: int64(id%50*10 + 1), SeqEnd: int64(id%50*10 + 10),
				Text: texts[i], TimeStart: time.Unix(1_700_000_000+int64(id)*60, 0), TimeEnd: time.Unix(1_700_000_000+int64(id)*60+600, 0)}
		}
		vecs, err := n.Embedder().Embed(ctx, embedder.Request{Texts: texts, Kind: embedder.KindDocument})
		if err != nil {
			return err
		}
		for i := range chunks {
			chunks[i].Vector = vecs[i]
		}
		byKey := map[string][]store.Chunk{}
		var keys []string
		for _, c := range chunks {
			if _, ok := byKey[c.SessionKey]; !ok {
				keys = append(keys, c.SessionKey)
			}
			byKey[c.SessionKey] = append(byKey[c.SessionKey], c)
		}
		b := store.Batch{}
		for _, k := range keys {
			cs := byKey[k]
			b.Rechunk = append(b.Rechunk, store.SessionChunks{Session: store.SessionRef{Namespace: ns, SessionKey: k, SessionID: "s1"}, From: cs[0].SeqStart, Chunks: cs})
		}
		if _, err := sh.Apply(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// benchSearch sends queries one at a time over NATS and reports latency
// percentiles as the client sees them.
func benchSearch(ctx context.Context, n *node.Node, ns string, size int, mode string, queries int) (searchFigure, error) {
	nc, err := nats.Connect(n.URL())
	if err != nil {
		return searchFigure{}, err
	}
	defer nc.Close()
	cl := query.NewClient(nc)
	g := corpus.New(7)
	lat := make([]float64, 0, queries)
	degraded := 0
	for i := 0; i < queries+20; i++ {
		q := g.Query(i%2 == 0)
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		t0 := time.Now()
		resp, err := cl.Search(qctx, memindex.SearchRequest{Namespace: ns, Query: q, K: 10, Mode: mode})
		el := time.Since(t0)
		cancel()
		if err != nil {
			return searchFigure{}, fmt.Errorf("search %q: %w", q, err)
		}
		if i >= 20 && len(resp.Degraded) > 0 {
			degraded++
		}
		if i >= 20 { // the first 20 warm up caches
			lat = append(lat, float64(el.Microseconds())/1000)
		}
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return searchFigure{Chunks: size, Mode: mode, Queries: len(lat), P50Ms: pct(0.50), P90Ms: pct(0.90), P99Ms: pct(0.99), MaxMs: lat[len(lat)-1], Degraded: degraded}, nil
}

// partitionOfSubject is the partition of an event published on subject
// (memindex.events.<namespace>).
func partitionOfSubject(subject string, partitions int) int {
	return memindex.Partition(strings.TrimPrefix(subject, memindex.EventSubjectPrefix+"."), partitions)
}
