package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"memindex"
	"memindex/internal/corpus"
	"memindex/internal/harness"
	"memindex/store"
)

// Report is what bench measures; `memindex bench --json` prints it, and
// WriteOutputs writes it to report.json.
type Report struct {
	Date        string              `json:"date"`
	Machine     string              `json:"machine"`
	Command     string              `json:"command"`
	Ingest      []IngestFigure      `json:"ingest,omitempty"`
	Stages      []StageFigure       `json:"stages,omitempty"`
	Hot         []HotFigure         `json:"hot,omitempty"` // hot.go
	Search      []SearchFigure      `json:"search,omitempty"`
	Startup     []StartupFigure     `json:"startup,omitempty"` // search.go
	Concurrency []ConcurrencyFigure `json:"concurrency,omitempty"`
	Vector      []VectorFigure      `json:"vector,omitempty"`
	Cluster     *ClusterReport      `json:"cluster,omitempty"` // cluster.go
	Locomo      *LocomoReport       `json:"locomo,omitempty"`  // locomo.go
}

// IngestFigure is one corpus ingested end to end.
type IngestFigure struct {
	Corpus    string  `json:"corpus"`
	Messages  int     `json:"messages"`
	Chunks    int64   `json:"chunks"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"messagesPerSecond"`
}

// SearchFigure is search latency at one namespace size and mode (memindex
// over NATS), or of one of the floors in process (Mode SearchFloorFTS5 or
// SearchFloorScan) over the same chunks in the same run.
type SearchFigure struct {
	Chunks  int     `json:"chunks"`
	Mode    string  `json:"mode"`
	Queries int     `json:"queries"`
	P50Ms   float64 `json:"p50Ms"`
	P90Ms   float64 `json:"p90Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
	// Degraded counts responses that flagged a leg missing or partial.
	Degraded int `json:"degraded"`
	// Tail is what the slowest 1 % of memindex's answers spent, where the
	// worker says (nil for the floors).
	Tail *SearchTail `json:"tail,omitempty"`
	// Worker is the percentiles of the time memindex's worker says it took
	// (SearchResponse.TookMs) over the same answers, beside the client's
	// above: the rest is NATS, encoding and scheduling (nil for the floors).
	Worker *SearchWorker `json:"worker,omitempty"`
	// CPUMsPerQuery and FaultsPerQuery are the process's CPU time (all
	// threads: worker, NATS server and client for memindex; the floor's own
	// work for a floor) and minor page faults while an answer was awaited,
	// a query on average. A fault is a trip to the hypervisor on a
	// virtualised box (about 10 µs on this project's: BENCHMARKS.md).
	CPUMsPerQuery  float64 `json:"cpuMsPerQuery"`
	FaultsPerQuery float64 `json:"faultsPerQuery"`
}

// SearchWorker is the p50 and p99 of the worker's own time for its answers
// (SearchResponse.TookMs), and the p50 of each leg's.
type SearchWorker struct {
	P50Ms        float64 `json:"p50Ms"`
	P99Ms        float64 `json:"p99Ms"`
	VectorP50Ms  float64 `json:"vectorP50Ms"`
	KeywordP50Ms float64 `json:"keywordP50Ms"`
}

// SearchTail is the mean of the slowest 1 % of a mode's answers (at least
// one): as the client timed them, as the worker timed its answer
// (SearchResponse.TookMs), and its vector and keyword legs (Legs; they run
// side by side).
type SearchTail struct {
	Queries   int     `json:"queries"`
	ClientMs  float64 `json:"clientMs"`
	WorkerMs  float64 `json:"workerMs"`
	VectorMs  float64 `json:"vectorMs"`
	KeywordMs float64 `json:"keywordMs"`
}

// Suites are the parts of the bench, in the order they run.
var Suites = []string{"ingest", "hot", "stages", "search", "concurrency", "vector", "locomo", "cluster"}

// DefaultSuites run when none are named: cluster, which starts several
// workers per run, runs only when asked; locomo only when its files exist.
var DefaultSuites = []string{"ingest", "hot", "stages", "search", "concurrency", "vector", "locomo"}

// Config is what Run measures.
type Config struct {
	// Suites are the parts to run, each one of Suites.
	Suites []string
	// Command and Date go into the report as they are; Date empty: now.
	Command, Date string
	// Dir holds every part's data (nodes, shard files, FTS5 floors).
	Dir string
	// Locomo is LoCoMo's events file (the ingest suite's first corpus, the
	// locomo suite's data); LocomoRequired makes the locomo suite fail
	// instead of skipping when its files are absent.
	Locomo         string
	LocomoRequired bool
	// Messages sizes the generated corpus of the ingest and stages suites
	// (0 skips it); HotMessages (one run a size, each into its own
	// namespace) and HotSessions the hot suite.
	Messages, HotSessions int
	HotMessages           []int
	// HotCases are the hot suite's cases to run, each one of HotCases
	// (none: all); HotRounds how many times each fresh-worker case and
	// NATS floor runs, the report keeping the round of the median rate
	// (0 or 1: once).
	HotCases  []string
	HotRounds int
	// SearchChunks are the namespace sizes of the search and concurrency
	// suites; Queries the requests per size and mode; Modes the search
	// modes (search and locomo suites).
	SearchChunks []int
	Queries      int
	Modes        []string
	// SlowTraceMs, when positive, has the search suite keep a flight
	// recorder of the execution trace and write its last seconds to
	// SlowTraceDir after each memindex answer slower than that at the
	// client (at most 3 files a size).
	SlowTraceMs  float64
	SlowTraceDir string
	// Clients are the concurrency suite's numbers of clients, each for
	// ConcurrencyDuration.
	Clients             []int
	ConcurrencyDuration time.Duration
	Vector              VectorConfig  // Log is set by Run
	Cluster             ClusterConfig // Dir, Log and Hooks are set by Run
	// Log reports progress (nil: nothing).
	Log   func(format string, a ...any)
	Hooks harness.Hooks
}

// Validate reports a Config Run cannot run.
func (c Config) Validate() error {
	for _, s := range c.Suites {
		if !slices.Contains(Suites, s) {
			return fmt.Errorf("bench: unknown part %q; use a comma-separated list of %s", s, strings.Join(Suites, ", "))
		}
	}
	if c.Dir == "" {
		return errors.New("bench: no data directory")
	}
	return nil
}

// Run runs cfg's suites and returns their report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	run := map[string]bool{}
	for _, s := range cfg.Suites {
		run[s] = true
	}
	host, _ := os.Hostname()
	rep := Report{Date: cfg.Date, Machine: machineLine(host), Command: cfg.Command}
	if rep.Date == "" {
		rep.Date = time.Now().UTC().Format(time.RFC3339)
	}
	say := cfg.Log
	if run["ingest"] || run["hot"] || run["search"] || run["concurrency"] {
		if err := runNodeSuites(ctx, cfg, run, &rep); err != nil {
			return rep, err
		}
	}
	if run["stages"] && cfg.Messages > 0 {
		say("stages: %d generated messages, each stage timed on its own …", cfg.Messages)
		figs, err := runStages(ctx, filepath.Join(cfg.Dir, "stages"), cfg.Messages, say)
		if err != nil {
			return rep, err
		}
		rep.Stages = figs
	}
	if run["vector"] {
		vc := cfg.Vector
		vc.Log = say
		say("vector: %v vectors, %d queries per variant …", vc.Sizes, vc.Queries)
		figs, err := RunVectorSuite(ctx, vc)
		if err != nil {
			return rep, err
		}
		rep.Vector = figs
	}
	if run["locomo"] {
		var err error
		if rep.Locomo, err = RunLocomoSuite(ctx, LocomoConfig{Events: cfg.Locomo, Dir: filepath.Join(cfg.Dir, "locomo"),
			Modes: cfg.Modes, Required: cfg.LocomoRequired, Log: say, Hooks: cfg.Hooks}); err != nil {
			return rep, err
		}
	}
	if run["cluster"] {
		cc := cfg.Cluster
		cc.Dir, cc.Log, cc.Hooks = filepath.Join(cfg.Dir, "cluster"), say, cfg.Hooks
		var err error
		if rep.Cluster, err = RunClusterSuite(ctx, cc); err != nil {
			return rep, err
		}
	}
	return rep, nil
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

// GeneratedEvents returns n message events spread over 100 namespaces and
// sessions of 100 messages.
func GeneratedEvents(n int) [][]byte { return generatedEventsIn("gen", n) }

// generatedEventsIn is GeneratedEvents in the namespaces <prefix>-00 to
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
