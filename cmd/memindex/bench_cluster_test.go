package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"memindex"
	"memindex/internal/bench"
)

// TestBenchClusterSuiteAtATinySize runs `memindex bench --suite cluster`
// with 1 and 2 workers at a tiny size and checks that its figures are real:
// every message applied at each number of workers, live and from a backlog
// (and spread over both workers at 2), each query answered on every path, the routed ones split
// by the Memindex-Forwarded-By header in agreement with the requests the
// workers' own search endpoints counted, only the worker that does not hold
// the partition named as the relay, and the dynamic group spread evenly.
func TestBenchClusterSuiteAtATinySize(t *testing.T) {
	if testing.Short() {
		t.Skip("starts several workers")
	}
	const messages, queries = 600, 30
	// The corpus must give both halves of the partitions work.
	halves := map[bool]int{}
	for _, l := range bench.GeneratedEvents(messages) {
		var ev memindex.Event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		halves[memindex.Partition(ev.Namespace, memindex.DefaultPartitions) < 8]++
	}
	if halves[true] == 0 || halves[false] == 0 {
		t.Fatalf("the generated corpus falls in one half of the partitions only: %v", halves)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := t.TempDir()
	args := []string{"--suite", "cluster", "--out", out, "--data", t.TempDir(), "--cluster-workers", "1,2",
		"--cluster-messages", "600", "--cluster-chunks", "200", "--queries", "30", "--cluster-lease-ttl", "1200ms", "--cluster-rounds", "1"}
	var stdout, stderr bytes.Buffer
	if err := runBench(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("runBench: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Logf("bench progress:\n%s", stderr.String())
	rep, b := readReport(t, out)
	if len(rep.Ingest) != 0 || len(rep.Vector) != 0 || rep.Cluster == nil {
		t.Fatalf("report = %s; want the cluster part only", b)
	}
	cr := rep.Cluster

	// Round 1 runs each number of workers live, then from a backlog.
	if len(cr.Ingest) != 4 {
		t.Fatalf("ingest figures = %+v, want 1 and 2 workers, live and backlog", cr.Ingest)
	}
	for i, f := range cr.Ingest {
		w, mode := i/2+1, []string{bench.IngestLive, bench.IngestBacklog}[i%2]
		var sum int64
		for _, m := range f.MessagesPerWorker {
			sum += m
			if m == 0 {
				t.Errorf("%s, %d workers: a worker applied nothing: %v", mode, w, f.MessagesPerWorker)
			}
		}
		if f.Mode != mode || f.Workers != w || f.Round != 1 || len(f.Partitions) != w || len(f.MessagesPerWorker) != w || f.Messages != messages || sum != messages {
			t.Errorf("ingest %+v: want %s, %d workers that applied %d messages between them", f, mode, w, messages)
		}
		if f.Chunks < 1 || f.Seconds <= 0 || f.PerSecond <= 0 || f.CPUSeconds <= 0 || f.CPUMicrosPerMessage <= 0 || f.CoresBusy <= 0 || f.PublishSeconds <= 0 {
			t.Errorf("ingest %+v: want chunks, time, rate, publish time and CPU time measured", f)
		}
		if (mode == bench.IngestBacklog) != (f.PublishCPUMicrosPerMessage > 0) {
			t.Errorf("ingest %+v: want the CPU time of the publish alone in backlog runs only", f)
		}
	}
	if got, want := cr.Ingest[2].Partitions, []string{"0-7", "8-15"}; !slices.Equal(got, want) {
		t.Errorf("2 workers' partitions = %v, want %v", got, want)
	}

	byPath := map[string]bench.ClusterSearchFigure{}
	for _, f := range cr.Search {
		byPath[f.Path] = f
		if f.Workers != 2 || f.Chunks != 200 {
			t.Errorf("search %+v: want 2 workers, 200 chunks", f)
		}
		if f.Queries > 0 && (f.P50Ms <= 0 || f.P99Ms < f.P50Ms || f.MaxMs < f.P99Ms) {
			t.Errorf("search %+v: want 0 < p50 <= p99 <= max", f)
		}
	}
	direct, own, relay := byPath[bench.PathDirect], byPath[bench.PathRoutedHolder], byPath[bench.PathRoutedRelay]
	if len(cr.Search) != 3 || direct.Queries != queries {
		t.Fatalf("search figures = %+v; want 3 paths, %d direct queries", cr.Search, queries)
	}
	// The queue group picks either worker at random: with 30 routed
	// queries both paths occur (all on one side: p = 2^-29).
	if own.Queries+relay.Queries != queries || own.Queries == 0 || relay.Queries == 0 {
		t.Errorf("routed queries: %d through the holder + %d relayed, want %d with both > 0", own.Queries, relay.Queries, queries)
	}
	// The workers' micro stats count what reached each one's search
	// endpoint: the header-less replies came from the holder, the others
	// through the other worker.
	if own.Received != own.Queries || relay.Received != relay.Queries {
		t.Errorf("search endpoints counted %d (holder) and %d (other), want %d and %d as the replies' headers say",
			own.Received, relay.Received, own.Queries, relay.Queries)
	}
	nonHolder := "bench-w1"
	if memindex.Partition("bench-cluster", memindex.DefaultPartitions) < 8 {
		nonHolder = "bench-w2"
	}
	if len(relay.RelayedBy) != 1 || relay.RelayedBy[nonHolder] != relay.Queries {
		t.Errorf("relayed by %v, want only %s (the worker without the partition), %d times", relay.RelayedBy, nonHolder, relay.Queries)
	}

	if len(cr.Spread) != 1 || cr.Spread[0].Workers != 2 || !slices.Equal(cr.Spread[0].Held, []int{8, 8}) || cr.Spread[0].Seconds <= 0 {
		t.Errorf("spread = %+v, want 2 workers holding 8 partitions each", cr.Spread)
	}

	md, err := os.ReadFile(filepath.Join(out, "tables.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Ingest with W workers", "| live | 2 | 0-7 / 8-15 |", "| backlog | 2 | 0-7 / 8-15 |", "picked worker relays to the holder", "Every run, in the order run", "A dynamic group started cold"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("tables.md lacks %q:\n%s", want, md)
		}
	}
}

func TestBenchClusterFlagErrorsNameTheFlag(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--cluster-workers", "0"}, "--cluster-workers"},
		{[]string{"--cluster-workers", "17"}, "--cluster-workers: 17 workers for 16 partitions"},
		{[]string{"--cluster-messages", "0"}, "--cluster-messages 0"},
		{[]string{"--cluster-chunks", "-1"}, "--cluster-chunks -1"},
		{[]string{"--cluster-rounds", "0"}, "--cluster-rounds 0"},
		{[]string{"--cluster-lease-ttl", "10ms"}, "--cluster-lease-ttl 10ms"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := append([]string{"--suite", "cluster", "--out", t.TempDir()}, tt.args...)
			err := runBench(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("runBench(%v)=%v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
	if slices.Contains(bench.DefaultSuites, "cluster") {
		t.Errorf("default suites %v include cluster; it runs only when asked", bench.DefaultSuites)
	}
}
