package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"memindex/internal/telemetry"
	"memindex/watch"
)

// watchFlags are publish's flags for --files DIR --watch.
type watchFlags struct {
	watch    bool
	debounce time.Duration
	state    string
}

func (w *watchFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&w.watch, "watch", false, "with --files: sync the directory once, then keep sending its changes (file.upserted, file.deleted) until interrupted")
	fs.DurationVar(&w.debounce, "debounce", watch.DefaultDebounce, "with --watch: how long a file must be quiet after a change before it is sent")
	fs.StringVar(&w.state, "state", "", "with --watch: the file recording what was sent, so a restart sends only what changed and deletes what was removed meanwhile (default: $XDG_STATE_HOME or ~/.local/state, memindex/watch/NS-HASH.json)")
}

// runWatch is `memindex publish --files DIR --watch`: watch.Run, printing
// each change (one JSON line each with --json), problems on stderr, and
// the summary when it stops.
func runWatch(ctx context.Context, conn connFlags, wf watchFlags, cfg watch.Config, asJSON bool, stdout, stderr io.Writer) error {
	cfg.Debounce, cfg.StateFile, cfg.AckTimeout = wf.debounce, wf.state, conn.Timeout
	if cfg.StateFile == "" {
		var err error
		if cfg.StateFile, err = watch.DefaultStateFile(cfg.Dir, cfg.Namespace, cfg.DirPath); err != nil {
			return fmt.Errorf("--state: %w", err)
		}
	}
	if wf.debounce <= 0 {
		return fmt.Errorf("--debounce %v must be positive", wf.debounce)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	pt, err := telemetry.StartPublish(ctx, os.Getenv, version)
	if err != nil {
		return err
	}
	nc, err := conn.Connect("memindex publish --watch")
	if err != nil {
		return err
	}
	defer nc.Close()
	enc := json.NewEncoder(stdout)
	line := func(kind string, s watch.Summary) {
		if asJSON {
			_ = enc.Encode(struct {
				Type string `json:"type"`
				watch.Summary
			}{kind, s})
			return
		}
		fmt.Fprintf(stdout, "%s: %d files in the index (%d upserted, %d deleted, %d unchanged, %d failed, %d problems) in %.2fs; last stream seq %d\n",
			kind, s.Files, s.Upserted, s.Deleted, s.Unchanged, s.Failed, s.Problems, s.Seconds, s.LastSeq)
	}
	cfg.Inject = pt.Inject
	cfg.OnChange = func(c watch.Change) {
		if asJSON {
			_ = enc.Encode(c)
			return
		}
		switch {
		case c.Type == "file.deleted":
			fmt.Fprintf(stdout, "deleted  %s (seq %d)\n", c.Path, c.Seq)
		default:
			fmt.Fprintf(stdout, "upserted %s (%d bytes, seq %d)\n", c.Path, c.Bytes, c.Seq)
		}
	}
	cfg.OnProblem = func(path string, err error) { fmt.Fprintf(stderr, "%s: %v\n", path, err) }
	cfg.OnSynced = func(s watch.Summary) {
		line("synced", s)
		if !asJSON {
			fmt.Fprintf(stderr, "watching %s for changes (debounce %v); Ctrl-C stops\n", cfg.Dir, cfg.Debounce)
		}
	}
	sum, err := watch.Run(ctx, nc, cfg)
	if perr := pt.End(context.WithoutCancel(ctx), sum.Upserted+sum.Deleted, sum.Failed); perr != nil {
		fmt.Fprintf(stderr, "flush traces: %v\n", perr)
	}
	if err != nil {
		if errors.Is(err, watch.ErrNoDir) || errors.Is(err, watch.ErrNotDir) {
			return fmt.Errorf("--files: %w", err)
		}
		return err
	}
	line("stopped", sum)
	return nil
}
