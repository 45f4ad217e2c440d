package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"memindex/internal/bench"
)

// TestBenchSuiteAtATinySize runs every part of `memindex bench` at a tiny
// size and checks that the report is complete and sane: the exact variants
// of the vector suite find the exact top 10, every stage and concurrency
// level measured something, and the outputs (report.json, tables.md,
// growth.png) are written. A second run reuses the cached vector files.
func TestBenchSuiteAtATinySize(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and builds shard files")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, cache := t.TempDir(), t.TempDir()
	args := []string{"--out", out, "--cache", cache, "--locomo", filepath.Join(t.TempDir(), "absent.jsonl"),
		"--messages", "300", "--hot-messages", "200,300", "--hot-sessions", "20", "--search-chunks", "300", "--queries", "5", "--modes", "hybrid,vector",
		"--clients", "1,4", "--concurrency-duration", "200ms",
		"--sizes", "300,1200", "--vector-queries", "6"}
	traceFile := filepath.Join(t.TempDir(), "run.trace")
	var stdout, stderr bytes.Buffer
	if err := runBench(ctx, append(slices.Clone(args), "--trace", traceFile), &stdout, &stderr); err != nil {
		t.Fatalf("runBench: %v\nstderr:\n%s", err, stderr.String())
	}
	if tr, err := os.ReadFile(traceFile); err != nil || !bytes.HasPrefix(tr, []byte("go 1.")) || len(tr) < 1<<10 {
		t.Errorf("--trace: %d bytes starting %q, %v; want an execution trace", len(tr), tr[:min(len(tr), 16)], err)
	}
	rep, _ := readReport(t, out)

	if len(rep.Ingest) != 1 || rep.Ingest[0].Messages != 300 || rep.Ingest[0].Chunks < 1 {
		t.Errorf("ingest = %+v, want one corpus of 300 messages with chunks", rep.Ingest)
	}
	var hot []string
	for _, f := range rep.Hot {
		hot = append(hot, fmt.Sprintf("%s/%d", f.System, f.Messages))
		if f.Seconds <= 0 || f.PerSecond <= 0 {
			t.Errorf("hot %+v: want time spent and a rate", f)
		}
		if f.System == bench.HotBacklog && (f.PublishSeconds <= 0 || f.PublishCPUMicrosPerMessage <= 0 || f.Sessions != 20) {
			t.Errorf("hot %+v: want the publishing's time and CPU, and the sessions", f)
		}
		// The spread cases spread 20 sessions over 20 namespaces, the others
		// over one.
		switch f.System {
		case bench.HotMemindexMany, bench.HotNATSMany, bench.HotMemindexManyFresh, bench.HotMemindexManyBatched, bench.HotNATSManyBatched:
			if f.Namespaces != 20 {
				t.Errorf("hot %+v: want 20 namespaces", f)
			}
		case bench.HotMemindex, bench.HotBacklog, bench.HotNATS, bench.HotMemindexBatched, bench.HotNATSBatched:
			if f.Namespaces != 1 {
				t.Errorf("hot %+v: want 1 namespace", f)
			}
		}
		// The batched cases send 10 messages an event; the rate, CPU and
		// batches are still counted in messages.
		switch f.System {
		case bench.HotMemindexBatched, bench.HotMemindexManyBatched, bench.HotNATSBatched, bench.HotNATSManyBatched:
			if f.MessagesPerEvent != 10 {
				t.Errorf("hot %+v: want 10 messages an event", f)
			}
		case bench.HotMemindex, bench.HotMemindexMany, bench.HotMemindexManyFresh, bench.HotNATS, bench.HotNATSMany:
			if f.MessagesPerEvent != 1 {
				t.Errorf("hot %+v: want 1 message an event", f)
			}
		}
		// NATS alone is timed with the process's CPU, and commits nothing.
		if strings.HasPrefix(f.System, "NATS alone") && (f.CPUMicrosPerMessage <= 0 || f.Commits != 0) {
			t.Errorf("hot %+v: want the CPU a message and no commits", f)
		}
		// memindex's rows count the worker's commits from its status: at
		// least one, at most one a message.
		if strings.HasPrefix(f.System, "memindex") && (f.Commits < 1 || f.Commits > f.Messages) {
			t.Errorf("hot %+v: want between 1 and %d commits", f, f.Messages)
		}
	}
	var wantHot []string
	for _, n := range []int{200, 300} {
		for _, s := range []string{bench.HotMemindex, bench.HotMemindexMany, bench.HotMemindexManyFresh, bench.HotMemindexBatched, bench.HotMemindexManyBatched, bench.HotBacklog,
			bench.HotNATS, bench.HotNATSMany, bench.HotNATSBatched, bench.HotNATSManyBatched, bench.HotFTSBatch, bench.HotFTSOne, bench.HotEmbed1, bench.HotEmbedN} {
			wantHot = append(wantHot, fmt.Sprintf("%s/%d", s, n))
		}
	}
	if !slices.Equal(hot, wantHot) {
		t.Errorf("hot systems = %v, want %v (each size of --hot-messages)", hot, wantHot)
	}
	var stages []string
	for _, s := range rep.Stages {
		stages = append(stages, s.Stage)
		if s.Seconds <= 0 || s.In < 1 || s.Out < 1 {
			t.Errorf("stage %+v: want time spent and items in and out", s)
		}
	}
	if want := []string{"decode", "chunk", "embed", "commit", "sum"}; !slices.Equal(stages, want) {
		t.Errorf("stages = %v, want %v", stages, want)
	}
	var search []string
	for _, f := range rep.Search {
		search = append(search, f.Mode)
		if f.Chunks != 300 || f.Queries != 5 || f.P50Ms <= 0 || f.P99Ms < f.P50Ms {
			t.Errorf("search %+v: want 5 queries at 300 chunks, p99 >= p50 > 0", f)
		}
		if f.Worker != nil && (f.CPUMsPerQuery <= 0 || f.FaultsPerQuery < 0) {
			t.Errorf("search %+v: want the CPU a memindex query took over NATS (> 0) and its page faults", f)
		}
	}
	if want := []string{"hybrid", "vector", bench.SearchFloorFTS5, bench.SearchFloorScan}; !slices.Equal(search, want) {
		t.Errorf("search systems = %v, want %v (the modes, then the floors of the same run)", search, want)
	}
	if len(rep.Startup) != 1 || rep.Startup[0].Chunks != 300 || rep.Startup[0].ShardChunks < 300 || rep.Startup[0].OpenSeconds <= 0 ||
		rep.Startup[0].KeywordSeconds < rep.Startup[0].OpenSeconds || rep.Startup[0].HeapBytes <= 0 {
		t.Errorf("startup = %+v, want one figure of the 300-chunk shard: Open time, then the keyword index, and the heap it holds", rep.Startup)
	}
	if len(rep.Concurrency) != 2 {
		t.Fatalf("concurrency figures = %+v, want 2 levels", rep.Concurrency)
	}
	for _, c := range rep.Concurrency {
		if c.Queries < c.Clients || c.Errors != 0 || c.PerSecond <= 0 || c.P50Ms <= 0 || c.P99Ms < c.P50Ms {
			t.Errorf("concurrency %+v: want at least one answered query per client, no errors, p99 >= p50 > 0", c)
		}
	}

	if len(rep.Vector) != 8 {
		t.Fatalf("vector figures = %d, want 4 variants × 2 sizes", len(rep.Vector))
	}
	for _, f := range rep.Vector {
		if f.Recall != 1 {
			t.Errorf("%s at %d: recall@10 %v, want 1 (every variant is an exact scan)", f.Variant, f.Size, f.Recall)
		}
		if f.Queries != 6 || f.P50Ms <= 0 || f.P99Ms < f.P50Ms {
			t.Errorf("%s at %d: %d queries, p50 %v, p99 %v; want 6 queries, p99 >= p50 > 0", f.Variant, f.Size, f.Queries, f.P50Ms, f.P99Ms)
		}
		if (f.DiskBytes > 0) == (f.Variant == bench.VariantGoScan) {
			t.Errorf("%s at %d: %d bytes on disk; want some for the SQLite files, none for go-scan", f.Variant, f.Size, f.DiskBytes)
		}
	}

	md, err := os.ReadFile(filepath.Join(out, "tables.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| vectors | variant |", "Growth, vector leg p50 ms", "| decode |", "| 1,200 | memindex |", "| " + bench.HotFTSOne + " | 300 | 20 |", "| " + bench.SearchFloorScan + " |", "Start-up of the shard"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("tables.md lacks %q", want)
		}
	}
	f, err := os.Open(filepath.Join(out, "growth.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("growth.png: %v", err)
	}
	if r := img.Bounds(); r.Dx() != 2*bench.PanelWidth || r.Dy() < 3*bench.PanelHeight {
		t.Errorf("growth.png is %v, want %d wide and three rows of panels", r, 2*bench.PanelWidth)
	}

	// --render writes the same tables from the saved report.
	again := t.TempDir()
	if err := runBench(ctx, []string{"--render", filepath.Join(out, "report.json"), "--out", again}, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatalf("--render: %v", err)
	}
	if md2, err := os.ReadFile(filepath.Join(again, "tables.md")); err != nil || !bytes.Equal(md2, md) {
		t.Errorf("--render wrote other tables (err %v):\n%s\nwant:\n%s", err, md2, md)
	}

	// The vector files are cached: a second run rebuilds nothing.
	stderr.Reset()
	if err := runBench(ctx, []string{"--suite", "vector", "--out", t.TempDir(), "--cache", cache, "--sizes", "300", "--vector-queries", "2"}, &stdout, &stderr); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if log := stderr.String(); !strings.Contains(log, "reusing") || strings.Contains(log, "built the") {
		t.Errorf("second run did not reuse the cache:\n%s", log)
	}
}

func TestBenchRejectsUnknownSuite(t *testing.T) {
	err := runBench(context.Background(), []string{"--suite", "vectors", "--out", t.TempDir()}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--suite") || !strings.Contains(err.Error(), "vector") {
		t.Fatalf("runBench(--suite vectors) = %v, want an error naming --suite and the known parts", err)
	}
}

// TestBenchRefusesAnEarlierRunsData: --data holding an earlier run's node
// directory is refused before anything starts, saying why; the directory
// is left as it was.
func TestBenchRefusesAnEarlierRunsData(t *testing.T) {
	data := t.TempDir()
	old := filepath.Join(data, "node", "shards")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := runBench(context.Background(), []string{"--suite", "hot", "--data", data, "--out", t.TempDir(),
		"--hot-messages", "100", "--hot-sessions", "5"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "earlier bench run") || !strings.Contains(err.Error(), filepath.Join(data, "node")) {
		t.Fatalf("runBench on an earlier run's --data: %v; want it refused, naming %s", err, filepath.Join(data, "node"))
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("the earlier run's directory: %v", err)
	}
}

// TestBenchHotCasesAndRounds: --hot-cases runs only the named cases of the
// hot suite (no floors unless named), --hot-rounds runs each of them that
// many times on fresh workers, and the report keeps the round of the
// median rate, which the output names beside every round's.
func TestBenchHotCasesAndRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := runBench(ctx, []string{"--suite", "hot", "--out", out, "--hot-messages", "200", "--hot-sessions", "20",
		"--hot-cases", "many-batched,backlog", "--hot-rounds", "3"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("runBench: %v\nstderr:\n%s", err, stderr.String())
	}
	rep, _ := readReport(t, out)
	var systems []string
	for _, f := range rep.Hot {
		systems = append(systems, f.System)
	}
	if want := []string{bench.HotMemindexManyBatched, bench.HotBacklog}; !slices.Equal(systems, want) {
		t.Fatalf("hot systems = %q, want %q", systems, want)
	}
	medians := 0
	for _, line := range strings.Split(stderr.String(), "\n") {
		var med float64
		var r [3]float64
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "median of 3 rounds: %f messages/s (rounds: %f, %f, %f)", &med, &r[0], &r[1], &r[2]); err != nil {
			continue
		}
		if !(r[0] <= r[1] && r[1] <= r[2]) || med != r[1] {
			t.Errorf("%q: want the middle of the sorted rounds", line)
		}
		if medians >= len(rep.Hot) {
			t.Fatalf("median line %d, %q, for %d hot figures", medians+1, line, len(rep.Hot))
		}
		f := rep.Hot[medians]
		if fmt.Sprintf("%.0f", f.PerSecond) != fmt.Sprintf("%.0f", med) {
			t.Errorf("report keeps %.0f messages/s for %s, the output's median is %.0f", f.PerSecond, f.System, med)
		}
		medians++
	}
	if medians != 2 {
		t.Fatalf("found %d median lines, want one a case:\n%s", medians, stderr.String())
	}
	if n := strings.Count(stderr.String(), "round 3 of 3"); n != 2 {
		t.Errorf("%d third rounds, want one a case:\n%s", n, stderr.String())
	}
}

// TestBenchRejectsUnknownHotCase: --hot-cases names only known cases, and
// --hot-rounds is at least 1.
func TestBenchRejectsUnknownHotCase(t *testing.T) {
	err := runBench(context.Background(), []string{"--suite", "hot", "--hot-cases", "one,spread", "--out", t.TempDir()}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `"spread"`) || !strings.Contains(err.Error(), "many-batched") {
		t.Fatalf("runBench(--hot-cases one,spread) = %v, want an error naming the case and the known ones", err)
	}
	err = runBench(context.Background(), []string{"--suite", "hot", "--hot-rounds", "0", "--out", t.TempDir()}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--hot-rounds") {
		t.Fatalf("runBench(--hot-rounds 0) = %v, want an error naming --hot-rounds", err)
	}
}

// readReport reads and decodes the report.json a bench run wrote to out,
// and returns it with its bytes.
func readReport(t *testing.T, out string) (bench.Report, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	return rep, b
}

// TestBenchHotEvents: --hot-events writes each hot load at each size as a
// JSONL file, measures nothing, and says (here as JSON) what each holds.
func TestBenchHotEvents(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	var stdout bytes.Buffer
	err := runBench(context.Background(), []string{"--hot-events", dir, "--hot-messages", "300,50", "--hot-sessions", "10", "--json", "--out", out}, &stdout, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var files []bench.HotEventsFile
	if err := json.Unmarshal(stdout.Bytes(), &files); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if len(files) != 8 { // one, many, batched, many-batched at each size
		t.Fatalf("%d files, want 8: %s", len(files), stdout.String())
	}
	for _, f := range files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if lines := bytes.Count(b, []byte("\n")); lines != f.Events || (f.Messages != 300 && f.Messages != 50) {
			t.Fatalf("%s: %d lines, %+v", f.Path, lines, f)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); !os.IsNotExist(err) {
		t.Fatalf("--hot-events wrote a report (%v): it measures nothing", err)
	}
	err = runBench(context.Background(), []string{"--hot-events", dir, "--hot-sessions", "0"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--hot-sessions") {
		t.Fatalf("--hot-sessions 0 = %v, want an error naming it", err)
	}
}
