package bench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The cluster suite's tables in the bench report (report.go).

// mergeClusterReports appends b's figures to a's (either may be nil).
func mergeClusterReports(a, b *ClusterReport) *ClusterReport {
	if b == nil {
		return a
	}
	if a == nil {
		a = &ClusterReport{}
	}
	a.Ingest = append(a.Ingest, b.Ingest...)
	a.Search = append(a.Search, b.Search...)
	a.Spread = append(a.Spread, b.Spread...)
	return a
}

// clusterPathLabels describe the search paths in tables.
var clusterPathLabels = map[string]string{
	PathDirect:       "direct: Go client → `memindex.psearch.<p>.<ns>` → holder",
	PathRoutedHolder: "routed: `memindex.search.<ns>`, picked worker holds it",
	PathRoutedRelay:  "routed: picked worker relays to the holder",
}

// writeClusterTables prints the cluster suite's figures as markdown.
func writeClusterTables(w io.Writer, rep *ClusterReport) {
	if rep == nil {
		return
	}
	if len(rep.Ingest) > 0 {
		writeClusterIngest(w, rep.Ingest)
	}
	if len(rep.Search) > 0 {
		fmt.Fprintln(w, "Search through the cluster, one request at a time (each query sent direct and routed, alternating which goes first):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| workers | chunks | mode | path | queries | p50 ms | p90 ms | p99 ms | max ms | counted by the workers' search endpoints |")
		fmt.Fprintln(w, "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|")
		for _, f := range rep.Search {
			recv := "—"
			if f.Path != PathDirect {
				recv = strconv.Itoa(f.Received)
			}
			fmt.Fprintf(w, "| %d | %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", f.Workers, benchThousands(f.Chunks), f.Mode, clusterPathLabels[f.Path],
				f.Queries, benchMs(f.P50Ms), benchMs(f.P90Ms), benchMs(f.P99Ms), benchMs(f.MaxMs), recv)
		}
		fmt.Fprintln(w)
	}
	if len(rep.Spread) > 0 {
		fmt.Fprintln(w, "A dynamic group started cold (seconds from the first worker's start until every partition is ready on exactly one worker, none over its share):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| workers | lease TTL s | seconds | partitions per worker |")
		fmt.Fprintln(w, "|---:|---:|---:|---|")
		for _, f := range rep.Spread {
			held := make([]string, len(f.Held))
			for i, h := range f.Held {
				held[i] = strconv.Itoa(h)
			}
			fmt.Fprintf(w, "| %d | %.1f | %.1f | %s |\n", f.Workers, f.LeaseTTLSeconds, f.Seconds, strings.Join(held, " / "))
		}
		fmt.Fprintln(w)
	}
}

// writeClusterIngest prints the median of the rounds of each mode and
// number of workers, then every run.
func writeClusterIngest(w io.Writer, figs []ClusterIngestFigure) {
	type key struct {
		mode    string
		workers int
	}
	var keys []key
	by := map[key][]ClusterIngestFigure{}
	for _, f := range figs {
		k := key{f.Mode, f.Workers}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], f)
	}
	modeRank := func(m string) int { return slices.Index([]string{IngestLive, IngestBacklog}, m) }
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(modeRank(a.mode), modeRank(b.mode)), cmp.Compare(a.workers, b.workers))
	})
	median := func(fs []ClusterIngestFigure, v func(ClusterIngestFigure) float64) float64 {
		xs := make([]float64, len(fs))
		for i, f := range fs {
			xs[i] = v(f)
		}
		slices.Sort(xs)
		if n := len(xs); n%2 == 0 {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
		return xs[len(xs)/2]
	}
	rate := func(f ClusterIngestFigure) float64 { return f.PerSecond }
	fmt.Fprintln(w, "Ingest with W workers in one process, static partitions, a fresh server and stream each run; live: workers running, the corpus")
	fmt.Fprintln(w, "published at full speed, first publish → last commit; backlog: the corpus published first, then the workers started together,")
	fmt.Fprintln(w, "first fetch → last commit. CPU is the process's (workers, NATS server and, live, the publisher). Median of the rounds:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| mode | workers | partitions | messages | rounds | messages/s | min–max | vs 1 worker | CPU µs/msg | cores busy | publish alone: CPU µs/msg |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|")
	for _, k := range keys {
		fs := by[k]
		byRate := func(a, b ClusterIngestFigure) int { return cmp.Compare(a.PerSecond, b.PerSecond) }
		lo, hi := slices.MinFunc(fs, byRate), slices.MaxFunc(fs, byRate)
		ratio := "—"
		if one, ok := by[key{k.mode, 1}]; ok {
			ratio = fmt.Sprintf("%.2f×", median(fs, rate)/median(one, rate))
		}
		pub := "—"
		if k.mode == IngestBacklog {
			pub = fmt.Sprintf("%.1f", median(fs, func(f ClusterIngestFigure) float64 { return f.PublishCPUMicrosPerMessage }))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %d | %s | %s–%s | %s | %.1f | %.2f | %s |\n", k.mode, k.workers, strings.Join(fs[0].Partitions, " / "),
			benchThousands(fs[0].Messages), len(fs), benchThousands(int(median(fs, rate))), benchThousands(int(lo.PerSecond)), benchThousands(int(hi.PerSecond)), ratio,
			median(fs, func(f ClusterIngestFigure) float64 { return f.CPUMicrosPerMessage }), median(fs, func(f ClusterIngestFigure) float64 { return f.CoresBusy }), pub)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every run, in the order run:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| round | mode | workers | chunks | seconds | messages/s | CPU s | CPU µs/msg | cores busy | publish s | messages per worker | load 1m before → after |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, f := range figs {
		per := make([]string, len(f.MessagesPerWorker))
		for i, m := range f.MessagesPerWorker {
			per[i] = benchThousands(int(m))
		}
		load := "—"
		if len(f.Load1) == 2 {
			load = fmt.Sprintf("%.2f → %.2f", f.Load1[0], f.Load1[1])
		}
		fmt.Fprintf(w, "| %d | %s | %d | %s | %.2f | %s | %.2f | %.1f | %.2f | %.2f | %s | %s |\n", f.Round, f.Mode, f.Workers, benchThousands(int(f.Chunks)), f.Seconds,
			benchThousands(int(f.PerSecond)), f.CPUSeconds, f.CPUMicrosPerMessage, f.CoresBusy, f.PublishSeconds, strings.Join(per, " / "), load)
	}
	fmt.Fprintln(w)
}
