package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"memindex/node"

	"github.com/schollz/progressbar/v3"
)

// runRebuild is `memindex rebuild`. With --partition N it rebuilds
// partition N's shard now, from the stream (or, with --from-snapshot, from
// its newest snapshot and then the stream after it), showing progress;
// with --all it removes every shard, and the next `memindex serve`
// rebuilds them. Either way the worker of the data directory must be
// stopped (the data lock refuses otherwise). The work is node.Rebuild's and
// node.DropShards'; the embedder stack and chunking flags are serve's.
func runRebuild(ctx context.Context, args []string, stdout io.Writer) error {
	fl := newFlagSet("rebuild", "--data DIR (--partition N ... [--from-snapshot] | --all)")
	d := node.DefaultConfig()
	req := node.RebuildRequest{Config: d}
	var conn connFlags
	conn.register(fl, "")
	fl.StringVar(&req.Data, "data", env("MEMINDEX_DATA", d.Data), "data directory of the stopped worker (MEMINDEX_DATA)")
	all := fl.Bool("all", false, "remove every shard; the next `memindex serve` rebuilds them from the stream")
	fl.BoolVar(&req.FromSnapshot, "from-snapshot", false, "start from the partition's newest snapshot in the MEMINDEX_SNAPSHOTS object store, then replay the stream after it")
	asJSON := fl.Bool("json", false, "progress as JSON lines (type rebuild.progress, then rebuild.done)")
	var provider providerFlags
	provider.register(fl, d.Embedder)
	registerStackFlags(fl, &req.Config, d)
	sqliteVec, sqliteVecErr := envBool("MEMINDEX_SQLITE_VEC", d.SQLiteVec)
	fl.BoolVar(&req.SQLiteVec, "sqlite-vec", sqliteVec, "as serve's --sqlite-vec (MEMINDEX_SQLITE_VEC)")
	partitionFlag(fl, &req.Partitions)
	if _, err := parseArgs(fl, args); err != nil {
		return err
	}
	switch {
	case sqliteVecErr != nil:
		return sqliteVecErr
	case *all && len(req.Partitions) > 0:
		return errors.New("name --partition N or --all, not both")
	case !*all && len(req.Partitions) == 0:
		fl.Usage()
		return errors.New("name --partition N or --all")
	case *all && req.FromSnapshot:
		return errors.New("--from-snapshot restores named partitions: use --partition N (repeatable)")
	}
	if *all {
		dir, parts, err := node.DropShards(req.Data)
		for _, p := range parts {
			fmt.Fprintf(stdout, "partition %d: shard removed; the next `memindex serve` rebuilds it from the stream\n", p)
		}
		if err == nil && len(parts) == 0 {
			fmt.Fprintf(stdout, "no shard file under %s\n", dir)
		}
		return err
	}
	req.NATS, req.Embedder = conn.Config, provider.config()
	fl.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "embedder", "model", "base-url", "dims":
			req.EmbedderSet = true
		}
	})
	if err := req.Validate(); err != nil {
		return err
	}
	progress := newRebuildProgress(stdout, *asJSON)
	req.Every, req.Progress, req.Note = progress.every, progress.show, progress.note
	return node.Rebuild(ctx, req)
}

// show prints e: the bar, a line or JSON while it runs, the summary when
// it is done.
func (r *rebuildProgress) show(e node.RebuildEvent) {
	if e.Type == "rebuild.done" {
		r.done(e)
		return
	}
	r.update(e)
}

// rebuildProgress shows a rebuild's progress: a bar on a terminal
// (github.com/schollz/progressbar, as publish's: width, throttling and the
// time left for free), a line every few seconds otherwise, JSON lines with
// --json.
type rebuildProgress struct {
	w     io.Writer
	json  bool
	tty   bool
	every time.Duration
	bar   *progressbar.ProgressBar // the partition being rebuilt, on a terminal
	barP  int
}

func newRebuildProgress(w io.Writer, asJSON bool) *rebuildProgress {
	r := &rebuildProgress{w: w, json: asJSON, tty: !asJSON && isTerminal(w), every: 2 * time.Second}
	if r.tty {
		r.every = 200 * time.Millisecond
	} else if asJSON {
		r.every = time.Second
	}
	return r
}

func (r *rebuildProgress) update(e node.RebuildEvent) {
	switch {
	case r.json:
		r.emit(e)
	case r.tty:
		if r.bar == nil || r.barP != e.Partition {
			r.endBar()
			r.bar = progressbar.NewOptions64(int64(max(e.TargetSeq, e.FirstSeq)-e.FirstSeq),
				progressbar.OptionSetWriter(r.w),
				progressbar.OptionSetWidth(30),
				progressbar.OptionFullWidth(),
				progressbar.OptionShowCount(),
				progressbar.OptionThrottle(r.every),
				progressbar.OptionSetSpinnerChangeInterval(0), // no ticker goroutine
			)
			r.barP = e.Partition
		}
		r.bar.Describe(fmt.Sprintf("partition %d: %d chunks, %d waiting for vectors", e.Partition, e.Chunks, e.VectorsWaiting))
		_ = r.bar.Set64(int64(e.AppliedSeq - min(e.AppliedSeq, e.FirstSeq)))
	default:
		fmt.Fprintf(r.w, "partition %d: %.0f%%, applied stream sequence %d of %d, %d chunks, %d waiting for vectors, %.0fs\n",
			e.Partition, 100*e.Fraction(), e.AppliedSeq, e.TargetSeq, e.Chunks, e.VectorsWaiting, e.Seconds)
	}
}

// endBar clears the bar's line, if a bar is drawn.
func (r *rebuildProgress) endBar() {
	if r.bar != nil {
		_ = r.bar.Clear()
		r.bar = nil
	}
}

func (r *rebuildProgress) done(e node.RebuildEvent) {
	if r.json {
		r.emit(e)
		return
	}
	r.endBar()
	from := "from the stream"
	if e.From != "" {
		from = fmt.Sprintf("from snapshot %s (stream sequence %d) and the stream after it", e.From, e.FirstSeq)
	}
	fmt.Fprintf(r.w, "partition %d: rebuilt %s: stream sequence %d, %d chunks, in %.1fs\n", e.Partition, from, e.AppliedSeq, e.Chunks, e.Seconds)
}

func (r *rebuildProgress) note(p int, msg string) {
	if r.json {
		b, _ := json.Marshal(map[string]any{"type": "rebuild.note", "partition": p, "message": msg})
		fmt.Fprintln(r.w, string(b))
		return
	}
	r.endBar()
	fmt.Fprintf(r.w, "partition %d: %s\n", p, msg)
}

func (r *rebuildProgress) emit(e node.RebuildEvent) {
	b, _ := json.Marshal(e)
	fmt.Fprintln(r.w, string(b))
}
