package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// WriteOutputs writes report.json, tables.md and growth.png to dir, which
// it creates when missing.
func WriteOutputs(dir string, rep Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := WriteTables(&md, rep); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tables.md"), md.Bytes(), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "growth.png"))
	if err != nil {
		return err
	}
	if err := writePlot(f, "memindex bench, "+rep.Date, growthPanels(rep)); err != nil {
		f.Close()
		return fmt.Errorf("growth.png: %w", err)
	}
	return f.Close()
}

// WriteTables prints every part of the report as markdown tables, then the
// growth tables (each figure by corpus size).
func WriteTables(w io.Writer, rep Report) error {
	fmt.Fprintf(w, "`%s` — %s — %s\n\n", rep.Command, rep.Date, rep.Machine)
	if len(rep.Ingest) > 0 {
		fmt.Fprintln(w, "Ingest end to end (publish over NATS to the last commit):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| corpus | messages | chunks | seconds | messages/s |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
		for _, f := range rep.Ingest {
			fmt.Fprintf(w, "| %s | %s | %s | %.2f | %s |\n", f.Corpus, benchThousands(f.Messages), benchThousands(int(f.Chunks)), f.Seconds, benchThousands(int(f.PerSecond)))
		}
		fmt.Fprintln(w)
	}
	writeHotTable(w, rep.Hot)
	if len(rep.Stages) > 0 {
		fmt.Fprintln(w, "Ingest per stage (each stage alone over the whole corpus, one goroutine):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| stage | in | out | seconds | messages/s |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
		for _, f := range rep.Stages {
			fmt.Fprintf(w, "| %s | %s | %s | %.2f | %s |\n", f.Stage, benchThousands(f.In), benchThousands(f.Out), f.Seconds, benchThousands(int(f.MessagesPerSecond)))
		}
		fmt.Fprintln(w)
	}
	if len(rep.Search) > 0 {
		fmt.Fprintln(w, "Search over NATS, one request at a time (the floors in process over the same chunks, taking turns query by query):")
		fmt.Fprintln(w)
		writeSearchTable(w, rep.Search)
	}
	if len(rep.Startup) > 0 {
		fmt.Fprintln(w, "Start-up of the shard holding a search namespace (its file opened afresh, read-only beside the node):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| namespace chunks | shard chunks | Open s (vectors in memory) | keyword index in memory s | Go heap held |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|")
		for _, f := range rep.Startup {
			fmt.Fprintf(w, "| %s | %s | %.2f | %.2f | %s |\n", benchThousands(f.Chunks), benchThousands(int(f.ShardChunks)), f.OpenSeconds, f.KeywordSeconds, benchBytes(f.HeapBytes))
		}
		fmt.Fprintln(w)
	}
	if len(rep.Concurrency) > 0 {
		fmt.Fprintln(w, "Search throughput over NATS under concurrency (each client one request at a time, as fast as answers come):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| chunks | mode | clients | seconds | queries | errors | queries/s | p50 ms | p99 ms |")
		fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, f := range rep.Concurrency {
			fmt.Fprintf(w, "| %s | %s | %d | %.1f | %d | %d | %s | %s | %s |\n", benchThousands(f.Chunks), f.Mode, f.Clients, f.Seconds, f.Queries, f.Errors, benchThousands(int(f.PerSecond)), benchMs(f.P50Ms), benchMs(f.P99Ms))
		}
		fmt.Fprintln(w)
	}
	if len(rep.Vector) > 0 {
		fmt.Fprintln(w, "Vector leg, four ways over the same seeded random 384-dim unit vectors (k = 10):")
		fmt.Fprintln(w)
		writeVectorTable(w, rep.Vector)
		fmt.Fprintln(w)
		writeGrowthTables(w, rep)
	}
	writeLocomoTable(w, rep.Locomo)    // locomo.go
	writeClusterTables(w, rep.Cluster) // cluster*.go
	return nil
}

// writeHotTable prints the hot suite: memindex end to end beside its
// floors, each as a rate and as a multiple of memindex's time on the one
// namespace.
func writeHotTable(w io.Writer, figs []HotFigure) {
	if len(figs) == 0 {
		return
	}
	ref := map[int]float64{} // messages → memindex's seconds on one namespace
	for _, f := range figs {
		if f.System == HotMemindex {
			ref[f.Messages] = f.Seconds
		}
	}
	fmt.Fprintln(w, "Ingest of one hot namespace (memindex over NATS, publish to last commit; NATS alone, publish to last arrival, nothing indexed; the other floors in process over the same messages):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| system | messages | sessions | seconds | messages/s | time vs memindex, one namespace | CPU µs a message | cores busy | page faults a message | commits | messages a batch |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range figs {
		vs := "—"
		if r := ref[f.Messages]; r > 0 && f.Seconds > 0 {
			vs = fmt.Sprintf("%.2f×", f.Seconds/r)
		}
		cpu, busy, faults := "—", "—", "—"
		if f.CPUMicrosPerMessage > 0 {
			cpu, busy = fmt.Sprintf("%.0f", f.CPUMicrosPerMessage), fmt.Sprintf("%.2f", f.CoresBusy)
		}
		if f.FaultsPerMessage > 0 {
			faults = fmt.Sprintf("%.2f", f.FaultsPerMessage)
		}
		commits := "—"
		if f.Commits > 0 {
			commits = benchThousands(f.Commits)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %s |\n", f.System, benchThousands(f.Messages), benchThousands(f.Sessions), f.Seconds,
			benchThousands(int(f.PerSecond)), vs, cpu, busy, faults, commits, meanBatch(f))
	}
	fmt.Fprintln(w)
	for _, f := range figs {
		if f.Namespaces > 1 && f.Namespaces < hotManyNamespaces {
			fmt.Fprintf(w, "%s (%s messages): its %s sessions spread over %d namespaces, one a session (fewer sessions than namespaces).\n\n",
				f.System, benchThousands(f.Messages), benchThousands(f.Sessions), f.Namespaces)
		}
	}
	writeHotOverNATS(w, figs)
	for _, f := range figs {
		if f.System == HotBacklog {
			fmt.Fprintf(w, "From a backlog (%s messages): published first, alone, in %.2f s (%.0f µs of CPU a message: publisher and NATS server), then a fresh worker timed from its start to its last commit.\n\n",
				benchThousands(f.Messages), f.PublishSeconds, f.PublishCPUMicrosPerMessage)
		}
	}
}

// writeHotOverNATS prints, for each size, memindex's rate over NATS
// alone's on the same load: on a box whose speed moves from minute to
// minute, both move with it, though not always together (they run
// seconds apart).
func writeHotOverNATS(w io.Writer, figs []HotFigure) {
	type key struct {
		system   string
		messages int
	}
	rate := map[key]float64{}
	var sizes []int
	for _, f := range figs {
		rate[key{f.System, f.Messages}] = f.PerSecond
		if f.System == HotNATS {
			sizes = append(sizes, f.Messages)
		}
	}
	for _, n := range sizes {
		var parts []string
		for _, p := range [][3]string{{HotMemindex, HotNATS, "one namespace"}, {HotMemindexMany, HotNATSMany, "100 namespaces"},
			{HotMemindexBatched, HotNATSBatched, "one namespace in events of 10"}, {HotMemindexManyBatched, HotNATSManyBatched, "100 namespaces in events of 10"}} {
			if m, t := rate[key{p[0], n}], rate[key{p[1], n}]; m > 0 && t > 0 {
				parts = append(parts, fmt.Sprintf("%s %.2f", p[2], m/t))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "memindex's rate over NATS alone's on the same load (%s messages): %s (the box's speed moves both, not always together).\n\n",
				benchThousands(n), strings.Join(parts, ", "))
		}
	}
}

// writeGrowthTables prints one table per vector figure: sizes down, variants
// across.
func writeGrowthTables(w io.Writer, rep Report) {
	sizes, variants := vectorAxes(rep.Vector)
	if len(sizes) < 2 {
		return
	}
	at := map[[2]string]VectorFigure{}
	for _, f := range rep.Vector {
		at[[2]string{strconv.Itoa(f.Size), f.Variant}] = f
	}
	for _, m := range []struct {
		title string
		val   func(VectorFigure) string
	}{
		{"p50 ms", func(f VectorFigure) string { return benchMs(f.P50Ms) }},
		{"p99 ms", func(f VectorFigure) string { return benchMs(f.P99Ms) }},
		{"bytes on disk", func(f VectorFigure) string {
			if f.DiskBytes == 0 {
				return "—"
			}
			return benchBytes(f.DiskBytes)
		}},
		{"RSS growth", func(f VectorFigure) string { return benchBytes(f.RSSBytes) }},
	} {
		fmt.Fprintf(w, "Growth, vector leg %s:\n\n| vectors |", m.title)
		for _, v := range variants {
			fmt.Fprintf(w, " %s |", v)
		}
		fmt.Fprint(w, "\n|---:|")
		for range variants {
			fmt.Fprint(w, "---:|")
		}
		fmt.Fprintln(w)
		for _, s := range sizes {
			fmt.Fprintf(w, "| %s |", benchThousands(s))
			for _, v := range variants {
				if f, ok := at[[2]string{strconv.Itoa(s), v}]; ok {
					fmt.Fprintf(w, " %s |", m.val(f))
				} else {
					fmt.Fprint(w, " |")
				}
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
}

// vectorAxes returns the sizes (ascending) and variants (first-seen order)
// of figs.
func vectorAxes(figs []VectorFigure) (sizes []int, variants []string) {
	for _, f := range figs {
		if !slices.Contains(sizes, f.Size) {
			sizes = append(sizes, f.Size)
		}
		if !slices.Contains(variants, f.Variant) {
			variants = append(variants, f.Variant)
		}
	}
	slices.Sort(sizes)
	return sizes, variants
}

// seriesBy groups figs into one plot series a name (first-seen order), a
// point a figure at (x, y); a figure named "" is left out.
func seriesBy[F any](figs []F, name func(F) string, x, y func(F) float64) []plotSeries {
	var ss []plotSeries
	for _, f := range figs {
		n := name(f)
		if n == "" {
			continue
		}
		i := slices.IndexFunc(ss, func(s plotSeries) bool { return s.Name == n })
		if i < 0 {
			i = len(ss)
			ss = append(ss, plotSeries{Name: n})
		}
		ss[i].X, ss[i].Y = append(ss[i].X, x(f)), append(ss[i].Y, y(f))
	}
	return ss
}

// growthPanels turns the report into the panels of growth.png.
func growthPanels(rep Report) []plotPanel {
	var panels []plotPanel
	if len(rep.Vector) > 0 {
		series := func(val func(VectorFigure) float64, skip string) []plotSeries {
			variant := func(f VectorFigure) string {
				if f.Variant == skip {
					return ""
				}
				return f.Variant
			}
			return seriesBy(rep.Vector, variant, func(f VectorFigure) float64 { return float64(f.Size) }, val)
		}
		panels = append(panels,
			plotPanel{Title: "Vector leg, p50", XLabel: "vectors", YLabel: "ms", Series: series(func(f VectorFigure) float64 { return f.P50Ms }, "")},
			plotPanel{Title: "Vector leg, p99", XLabel: "vectors", YLabel: "ms", Series: series(func(f VectorFigure) float64 { return f.P99Ms }, "")},
			plotPanel{Title: "Bytes on disk", XLabel: "vectors", YLabel: "MiB", Series: series(func(f VectorFigure) float64 { return float64(f.DiskBytes) / (1 << 20) }, VariantGoScan)},
			plotPanel{Title: "RSS growth", XLabel: "vectors", YLabel: "MiB", Series: series(func(f VectorFigure) float64 { return float64(f.RSSBytes) / (1 << 20) }, "")},
		)
	}
	if len(rep.Hot) > 0 {
		ss := seriesBy(rep.Hot, func(f HotFigure) string { return f.System }, func(f HotFigure) float64 { return float64(f.Messages) }, func(f HotFigure) float64 { return f.PerSecond })
		panels = append(panels, plotPanel{Title: "Ingest, one hot namespace", XLabel: "messages", YLabel: "messages/s", Series: ss})
	}
	if len(rep.Search) > 0 {
		series := func(val func(SearchFigure) float64) []plotSeries {
			return seriesBy(rep.Search, func(f SearchFigure) string { return f.Mode }, func(f SearchFigure) float64 { return float64(f.Chunks) }, val)
		}
		panels = append(panels,
			plotPanel{Title: "Search over NATS (floors in process), p50", XLabel: "chunks", YLabel: "ms", Series: series(func(f SearchFigure) float64 { return f.P50Ms })},
			plotPanel{Title: "Search over NATS (floors in process), p99", XLabel: "chunks", YLabel: "ms", Series: series(func(f SearchFigure) float64 { return f.P99Ms })})
	}
	if len(rep.Concurrency) > 0 {
		ss := seriesBy(rep.Concurrency, func(f ConcurrencyFigure) string { return fmt.Sprintf("%d clients", f.Clients) },
			func(f ConcurrencyFigure) float64 { return float64(f.Chunks) }, func(f ConcurrencyFigure) float64 { return f.PerSecond })
		panels = append(panels, plotPanel{Title: "Hybrid search under concurrency", YLabel: "queries/s", Series: ss})
	}
	return panels
}

// Merge reads the report.json files at paths and merges them: the first
// one's date, machine and command (the others' commands appended), every
// one's figures in order, and the last LoCoMo part given.
func Merge(paths []string) (Report, error) {
	var rep Report
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return Report{}, err
		}
		var r Report
		if err := json.Unmarshal(b, &r); err != nil {
			return Report{}, fmt.Errorf("%s: not a bench report: %w", p, err)
		}
		if i == 0 {
			rep.Date, rep.Machine, rep.Command = r.Date, r.Machine, r.Command
		} else {
			rep.Command += "; " + r.Command
		}
		rep.Ingest = append(rep.Ingest, r.Ingest...)
		rep.Stages = append(rep.Stages, r.Stages...)
		rep.Hot = append(rep.Hot, r.Hot...)
		rep.Search = append(rep.Search, r.Search...)
		rep.Startup = append(rep.Startup, r.Startup...)
		rep.Concurrency = append(rep.Concurrency, r.Concurrency...)
		rep.Vector = append(rep.Vector, r.Vector...)
		rep.Cluster = mergeClusterReports(rep.Cluster, r.Cluster)
		if r.Locomo != nil { // one LoCoMo run a report: the last one given wins
			rep.Locomo = r.Locomo
		}
	}
	return rep, nil
}

// writeSearchTable writes the search figures' table: the client's
// percentiles, and for memindex the worker's own p50 and p99 (a dash for
// the floors, timed in process).
func writeSearchTable(w io.Writer, figs []SearchFigure) {
	fmt.Fprintln(w, "| chunks | mode | queries | p50 ms | p90 ms | p99 ms | max ms | degraded | worker's own p50 / p99 ms | CPU ms a query | page faults a query |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range figs {
		worker := "—"
		if f.Worker != nil {
			worker = benchMs(f.Worker.P50Ms) + " / " + benchMs(f.Worker.P99Ms)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %d | %s | %s | %.1f |\n", benchThousands(f.Chunks), f.Mode, f.Queries, benchMs(f.P50Ms), benchMs(f.P90Ms), benchMs(f.P99Ms), benchMs(f.MaxMs), f.Degraded, worker,
			benchMs(f.CPUMsPerQuery), f.FaultsPerQuery)
	}
	fmt.Fprintln(w)
}
