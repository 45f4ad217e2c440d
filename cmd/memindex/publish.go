package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"memindex/client"
	"memindex/internal/telemetry"
	"memindex/watch"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/schollz/progressbar/v3"

	"memindex"
)

func runPublish(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var conn connFlags
	fs := newFlagSet("publish", "--namespace NS [flags] FILE.jsonl|-\n       memindex publish --namespace NS --files DIR [--watch] [flags]")
	conn.register(fs, nats.DefaultURL)
	ns := fs.String("namespace", env("MEMINDEX_NAMESPACE", ""), "namespace of events that do not name one (MEMINDEX_NAMESPACE)")
	raw := fs.Bool("raw", false, "publish each line as it is, without adding type or namespace or checking it")
	asJSON := fs.Bool("json", false, "print the summary as JSON (with --watch: one JSON line per event sent, then the synced and stopped summaries)")
	maxPending := fs.Int("max-pending", 4096, "unacknowledged publishes in flight")
	eventMessages := fs.Int("event-messages", client.DefaultGroupMessages, fmt.Sprintf("most message lines in one event: valid message lines of a session (without eventId) go out as one messages event, other sessions' lines between them or not (1 to %d; 1: one event a line; not with --raw)", memindex.MaxEventMessages))
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
	var wf watchFlags
	wf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *eventMessages < 1 || *eventMessages > memindex.MaxEventMessages {
		return fmt.Errorf("--event-messages %d: want 1 to %d", *eventMessages, memindex.MaxEventMessages)
	}
	if wf.watch {
		if *filesDir == "" || len(pos) > 0 {
			return errors.New("--watch needs --files DIR and no FILE.jsonl")
		}
		if *ns == "" {
			return errors.New("--files needs --namespace")
		}
		return runWatch(ctx, conn, wf, watch.Config{Dir: *filesDir, Namespace: *ns, DirPath: *dirPath, Excludes: excludes}, *asJSON, stdout, stderr)
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
	pt, err := telemetry.StartPublish(ctx, os.Getenv, version)
	if err != nil {
		return err
	}
	nc, err := conn.Connect("memindex publish")
	if err != nil {
		return err
	}
	defer nc.Close()
	var bar *progressbar.ProgressBar // nil: no bar (not a terminal, or --json)
	if isTerminal(stderr) && !*asJSON {
		bar = publishBar(stderr, size)
	}
	lc := client.LinesConfig{
		Namespace: *ns, Raw: *raw, MaxPending: *maxPending, AckTimeout: conn.Timeout, EventMessages: *eventMessages,
		Inject:  pt.Inject,
		Problem: func(line int, err error) { fmt.Fprintf(stderr, "line %d: %v\n", line, err) },
	}
	if bar != nil {
		lc.Read = func(n int64) { _ = bar.Add64(n) } // it errs only past the size (a file growing while read)
		lc.Acked = func(n int64) { bar.Describe(fmt.Sprintf("%d lines", n)) }
	}
	if os.Getenv("GOGC") == "" {
		// The publisher's heap is small (at most --max-pending publishes
		// and client.DefaultMaxPendingBytes of payload in flight), so the
		// collector ran often: about a quarter of its CPU. A command that
		// ends when its file does spends some tens of MiB to save that
		// (BENCHMARKS.md, twenty-third session); GOGC in the environment
		// wins.
		defer debug.SetGCPercent(debug.SetGCPercent(publishGOGC))
	}
	res, err := client.PublishLines(ctx, nc, in, lc)
	if bar != nil {
		endBar(bar, stderr, err == nil && ctx.Err() == nil)
	}
	if err := pt.End(context.WithoutCancel(ctx), res.Published, res.Failed); err != nil {
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

// publishBar is publish's progress bar on a terminal: the bytes of the
// input read (a spinner when the size is unknown, as for stdin), their rate
// and the time left, and the events acknowledged. It is
// github.com/schollz/progressbar rather than the hand-drawn line before it
// because that fits the bar to the terminal's width, throttles redraws and
// predicts the time left, and draws from the publishing goroutine (no
// goroutine to own).
func publishBar(w io.Writer, size int64) *progressbar.ProgressBar {
	if size <= 0 {
		size = -1
	}
	return progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("0 events"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionFullWidth(),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetSpinnerChangeInterval(0), // no ticker goroutine: the spinner moves as lines are read
	)
}

// endBar leaves the bar's last drawing on a line of its own: full when the
// input was read to its end, as far as it got otherwise.
func endBar(bar *progressbar.ProgressBar, w io.Writer, complete bool) {
	if complete {
		_ = bar.Finish()
	} else {
		_ = bar.Exit()
	}
	fmt.Fprintln(w)
}

// publishGOGC is the collector's target percentage while `memindex
// publish` sends a file, unless GOGC is set.
const publishGOGC = 400
