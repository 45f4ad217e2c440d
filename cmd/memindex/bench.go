package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"memindex"
	"memindex/consumer"
	"memindex/internal/bench"
	"memindex/internal/harness"
)

// runBench parses `memindex bench`'s flags, runs internal/bench with the
// node adapter of benchnode.go, and prints the report.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", "[flags]")
	suite := fs.String("suite", env("MEMINDEX_BENCH_SUITE", strings.Join(bench.DefaultSuites, ",")), "parts to run, comma-separated: "+strings.Join(bench.Suites, ", ")+" (cluster only when named)")
	locomo := fs.String("locomo", env("MEMINDEX_LOCOMO", "../shared/eval-data/locomo/locomo10.events.jsonl"), "LoCoMo events file (the locomo suite also reads the .queries.jsonl beside it); skipped when absent")
	messages := fs.Int("messages", 100000, "messages in the generated ingest corpus (ingest and stages suites; 0 skips it)")
	hotMessages := fs.String("hot-messages", "100000", "hot suite: messages into one namespace (and, beside it, spread over 100 namespaces), a comma-separated list of sizes, each a run of its own; empty or 0 skips it")
	hotSessions := fs.Int("hot-sessions", 1000, "hot suite: interleaved sessions of the one namespace")
	hotCases := fs.String("hot-cases", "", "hot suite: the cases to run, comma-separated: "+strings.Join(bench.HotCases, ", ")+" (empty: all)")
	hotRounds := fs.Int("hot-rounds", 1, "hot suite: times each fresh-worker case and NATS floor runs; the report keeps the round of the median rate")
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
	hotEvents := fs.String("hot-events", "", "measure nothing: write the hot suite's loads (one, many, batched, many-batched at each --hot-messages size over --hot-sessions sessions) as JSONL files under this directory, for `memindex publish` into a `memindex serve` (scripts/e2e-ingest.sh)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memProfile := fs.String("memprofile", "", "write the allocations of the whole run (pprof's allocs profile: -sample_index=alloc_space for bytes) to this file at its end")
	traceFile := fs.String("trace", "", "write an execution trace of the whole run to this file (go tool trace: which goroutine waits on which)")
	slowTrace := fs.Float64("slow-trace-ms", 0, "search suite: after a memindex answer slower than this many ms at the client, write the last seconds of the execution trace (a flight recorder) to --out as slow-<chunks>-<mode>-<n>.trace, at most 3 a size; 0: off")
	clusterF := registerClusterFlags(fs)
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if *render != "" {
		rep, err := bench.Merge(strings.Split(*render, ","))
		if err != nil {
			return fmt.Errorf("--render: %w", err)
		}
		if err := bench.WriteOutputs(*out, rep); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		return bench.WriteTables(stdout, rep)
	}
	if *hotEvents != "" {
		return writeHotEvents(stdout, *hotEvents, *hotMessages, *hotSessions, *asJSON)
	}
	cfg := bench.Config{Locomo: *locomo, Messages: *messages, HotSessions: *hotSessions,
		Queries: *queries, Modes: splitList(*modes), ConcurrencyDuration: *concDur,
		Command: "memindex bench " + strings.Join(args, " "), Hooks: harness.Nodes, SlowTraceMs: *slowTrace, SlowTraceDir: *out}
	if *slowTrace < 0 {
		return fmt.Errorf("--slow-trace-ms %g: want 0 (off) or more", *slowTrace)
	}
	for _, s := range splitList(*suite) {
		if !slices.Contains(bench.Suites, s) {
			return fmt.Errorf("--suite: unknown part %q; use a comma-separated list of %s", s, strings.Join(bench.Suites, ", "))
		}
		cfg.Suites = append(cfg.Suites, s)
	}
	var err error
	if strings.TrimSpace(*hotMessages) != "0" {
		if cfg.HotMessages, err = parseSizes("--hot-messages", *hotMessages); err != nil {
			return err
		}
	}
	if cfg.SearchChunks, err = parseSizes("--search-chunks", *sizes); err != nil {
		return err
	}
	vectorSizes, err := parseSizes("--sizes", *vecSizes)
	if err != nil {
		return err
	}
	if cfg.Clients, err = parseSizes("--clients", *clients); err != nil {
		return err
	}
	if cfg.Cluster, err = clusterF.config(*queries); err != nil {
		return err
	}
	for _, c := range splitList(*hotCases) {
		if !slices.Contains(bench.HotCases, c) {
			return fmt.Errorf("--hot-cases: unknown case %q; use a comma-separated list of %s", c, strings.Join(bench.HotCases, ", "))
		}
		cfg.HotCases = append(cfg.HotCases, c)
	}
	if *hotRounds < 1 {
		return fmt.Errorf("--hot-rounds %d: want at least 1", *hotRounds)
	}
	cfg.HotRounds = *hotRounds
	if *hotSessions < 1 {
		return fmt.Errorf("--hot-sessions %d: want at least 1", *hotSessions)
	}
	if *vecQueries < 1 {
		return fmt.Errorf("--vector-queries %d: want at least 1", *vecQueries)
	}
	if slices.Contains(cfg.Suites, "locomo") {
		// Named, the locomo suite fails without its files; by default it is skipped.
		cfg.LocomoRequired = os.Getenv("MEMINDEX_BENCH_SUITE") != ""
		fs.Visit(func(f *flag.Flag) { cfg.LocomoRequired = cfg.LocomoRequired || f.Name == "suite" })
	}
	for _, rec := range []struct {
		path  string
		start func(io.Writer) error
		stop  func()
	}{{*cpuProfile, pprof.StartCPUProfile, pprof.StopCPUProfile}, {*traceFile, trace.Start, trace.Stop}, allocsProfile(*memProfile)} {
		if rec.path == "" {
			continue
		}
		f, err := os.Create(rec.path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := rec.start(f); err != nil {
			return err
		}
		defer rec.stop()
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	cfg.Dir = *keep
	cacheDir := filepath.Join(*out, "cache")
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "memindex-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	} else {
		cacheDir = filepath.Join(cfg.Dir, "vector-cache")
	}
	if *cache != "" {
		cacheDir = *cache
	}
	cfg.Vector = bench.VectorConfig{Sizes: vectorSizes, Queries: *vecQueries, Budget: *vecBudget,
		MinQueries: min(3, *vecQueries), CacheDir: cacheDir, Seed: 42}
	cfg.Log = func(format string, a ...any) {
		if !*asJSON {
			fmt.Fprintf(stderr, format+"\n", a...)
		}
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := bench.WriteOutputs(*out, rep); err != nil {
		return err
	}
	cfg.Log("wrote %s", strings.Join([]string{filepath.Join(*out, "report.json"), filepath.Join(*out, "tables.md"), filepath.Join(*out, "growth.png")}, ", "))
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return bench.WriteTables(stdout, rep)
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

// splitList returns the comma-separated entries of s, trimmed, empty ones
// left out.
func splitList(s string) []string {
	var out []string
	for _, m := range strings.Split(s, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// clusterFlags are the cluster suite's flags of `memindex bench`.
type clusterFlags struct {
	workers  *string
	messages *int
	rounds   *int
	chunks   *int
	group    *bool
	leaseTTL *time.Duration
}

// registerClusterFlags registers the cluster suite's flags on fs.
func registerClusterFlags(fs *flag.FlagSet) clusterFlags {
	return clusterFlags{
		workers:  fs.String("cluster-workers", "1,2,3", "cluster suite: numbers of workers to ingest with, each on a fresh stream"),
		messages: fs.Int("cluster-messages", 50000, "cluster suite: messages in the generated corpus every number of workers ingests"),
		rounds:   fs.Int("cluster-rounds", 3, "cluster suite: times every number of workers ingests the corpus (the tables give the median); the search part and the group run once"),
		chunks:   fs.Int("cluster-chunks", 10000, "cluster suite: chunks in the namespace searched direct and through non-holders (at 2 workers, else the most); 0 skips the search part"),
		group:    fs.Bool("cluster-group", true, "cluster suite: also start a dynamic group of the most workers and time how long its partitions take to spread"),
		leaseTTL: fs.Duration("cluster-lease-ttl", consumer.DefaultLeaseTTL, "cluster suite: lease TTL of the dynamic group (renewals and claims run every TTL/6)"),
	}
}

// config validates the flags and returns the suite's configuration
// (bench.Run sets its Dir, Log and Hooks).
func (f clusterFlags) config(queries int) (bench.ClusterConfig, error) {
	ws, err := parseSizes("--cluster-workers", *f.workers)
	if err != nil {
		return bench.ClusterConfig{}, err
	}
	if len(ws) == 0 {
		return bench.ClusterConfig{}, errors.New("--cluster-workers: empty; give numbers of workers such as 1,2,3")
	}
	for _, w := range ws {
		if w > memindex.DefaultPartitions {
			return bench.ClusterConfig{}, fmt.Errorf("--cluster-workers: %d workers for %d partitions; give at most %d", w, memindex.DefaultPartitions, memindex.DefaultPartitions)
		}
	}
	if *f.messages < 1 {
		return bench.ClusterConfig{}, fmt.Errorf("--cluster-messages %d: want at least 1", *f.messages)
	}
	if *f.rounds < 1 {
		return bench.ClusterConfig{}, fmt.Errorf("--cluster-rounds %d: want at least 1", *f.rounds)
	}
	if *f.chunks < 0 {
		return bench.ClusterConfig{}, fmt.Errorf("--cluster-chunks %d: want 0 (skip the search part) or more", *f.chunks)
	}
	if *f.group && *f.leaseTTL < time.Second {
		return bench.ClusterConfig{}, fmt.Errorf("--cluster-lease-ttl %s: want at least 1s", *f.leaseTTL)
	}
	ttl := time.Duration(0)
	if *f.group {
		ttl = *f.leaseTTL
	}
	return bench.ClusterConfig{Workers: ws, Messages: *f.messages, Rounds: *f.rounds, Chunks: *f.chunks, Queries: queries, GroupTTL: ttl}, nil
}

// allocsProfile is --memprofile's recording: the runtime samples
// allocations from the start anyway (one a 512 KiB on average), so it only
// writes the allocs profile of the run at its end.
func allocsProfile(path string) (r struct {
	path  string
	start func(io.Writer) error
	stop  func()
}) {
	var to io.Writer
	r.path = path
	r.start = func(w io.Writer) error { to = w; return nil }
	r.stop = func() { _ = pprof.Lookup("allocs").WriteTo(to, 0) }
	return r
}

// writeHotEvents is `memindex bench --hot-events DIR`: the hot suite's
// loads at each size as JSONL files, and a line (or JSON) saying what each
// holds.
func writeHotEvents(stdout io.Writer, dir, sizes string, sessions int, asJSON bool) error {
	ns, err := parseSizes("--hot-messages", sizes)
	if err != nil {
		return err
	}
	if len(ns) == 0 {
		return fmt.Errorf("--hot-events: --hot-messages names no size")
	}
	if sessions < 1 {
		return fmt.Errorf("--hot-sessions %d: want at least 1", sessions)
	}
	var all []bench.HotEventsFile
	for _, n := range ns {
		files, err := bench.WriteHotEvents(dir, n, sessions)
		if err != nil {
			return fmt.Errorf("--hot-events: %w", err)
		}
		all = append(all, files...)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	for _, f := range all {
		fmt.Fprintf(stdout, "%s\t%s: %d events, %d messages\n", f.Path, f.Case, f.Events, f.Messages)
	}
	return nil
}
