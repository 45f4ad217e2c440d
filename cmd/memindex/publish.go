package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"memindex/client"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
)

func runPublish(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var conn connFlags
	fs := newFlagSet("publish", "--namespace NS [flags] FILE.jsonl|-")
	conn.register(fs, nats.DefaultURL)
	ns := fs.String("namespace", env("MEMINDEX_NAMESPACE", ""), "namespace of events that do not name one (MEMINDEX_NAMESPACE)")
	raw := fs.Bool("raw", false, "publish each line as it is, without adding type or namespace or checking it")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	maxPending := fs.Int("max-pending", 4096, "unacknowledged publishes in flight")
	filesDir := fs.String("files", "", "publish the .md files under this directory as memory files (file.upserted), instead of a JSONL file")
	dirPath := fs.String("dir-path", "", "with --files: the project the files belong to (\"\": global)")
	var excludes []string
	fs.Func("exclude", "with --files: skip paths (relative to the directory) matching this glob; repeatable", func(g string) error {
		if _, err := filepath.Match(g, ""); err != nil {
			return fmt.Errorf("bad glob %q: %w", g, err)
		}
		excludes = append(excludes, g)
		return nil
	})
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *filesDir != "" {
		if *ns == "" {
			return errors.New("--files needs --namespace")
		}
		evs, err := client.MemoryFileEvents(*filesDir, *dirPath, excludes)
		if err != nil {
			return fmt.Errorf("--files: %w", err)
		}
		var lines bytes.Buffer
		enc := json.NewEncoder(&lines)
		for _, ev := range evs {
			if err := enc.Encode(ev); err != nil {
				return err
			}
		}
		stdin, pos = &lines, []string{"-"}
	}
	if len(pos) != 1 {
		fs.Usage()
		return errors.New("name one FILE.jsonl, or - for stdin (or --files DIR)")
	}
	if *ns != "" && !memindex.ValidNamespace(*ns) {
		return fmt.Errorf("--namespace %q is not 1-64 characters of [A-Za-z0-9_-]", *ns)
	}
	in, size := stdin, int64(0)
	if name := pos[0]; name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		in = f
	}
	pt, err := startPublishTrace(ctx, os.Getenv)
	if err != nil {
		return err
	}
	nc, err := conn.connect("memindex publish")
	if err != nil {
		return err
	}
	defer nc.Close()
	var prog client.LinesProgress
	stopProgress := func() {}
	if isTerminal(stderr) && !*asJSON {
		stopProgress = progress(stderr, time.Now(), size, &prog)
	}
	res, err := client.PublishLines(ctx, nc, in, client.LinesConfig{
		Namespace: *ns, Raw: *raw, MaxPending: *maxPending, AckTimeout: conn.timeout,
		Inject:   pt.inject,
		Problem:  func(line int, err error) { fmt.Fprintf(stderr, "line %d: %v\n", line, err) },
		Progress: &prog,
	})
	stopProgress()
	if err := pt.end(context.WithoutCancel(ctx), res.Published, res.Failed); err != nil {
		fmt.Fprintf(stderr, "flush traces: %v\n", err)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "published %d events (%d duplicates, %d rejected, %d failed) in %.2fs, %.0f/s; last stream seq %d\n",
			res.Published, res.Duplicates, res.Rejected, res.Failed, res.Seconds, res.PerSecond, res.LastSeq)
	}
	if res.Failed > 0 || res.Rejected > 0 {
		return fmt.Errorf("%d lines rejected, %d publishes failed", res.Rejected, res.Failed)
	}
	return nil
}

// progress draws a one-line progress bar on w until the returned stop is called.
func progress(w io.Writer, start time.Time, size int64, p *client.LinesProgress) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	draw := func() {
		n := p.Acked.Load()
		rate := float64(n) / max(time.Since(start).Seconds(), 1e-3)
		if size > 0 {
			frac := min(float64(p.Read.Load())/float64(size), 1)
			const width = 30
			bar := strings.Repeat("█", int(frac*width)) + strings.Repeat("░", width-int(frac*width))
			fmt.Fprintf(w, "\r%s %3.0f%%  %s events  %.0f/s ", bar, frac*100, strconv.FormatInt(n, 10), rate)
		} else {
			fmt.Fprintf(w, "\r%d events  %.0f/s ", n, rate)
		}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				draw()
				fmt.Fprintln(w)
				return
			case <-t.C:
				draw()
			}
		}
	}()
	return func() { close(done); <-finished }
}
