package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/schollz/progressbar/v3"

	"memindex"
	"memindex/importer"
)

func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var conn connFlags
	fs := newFlagSet("import", "--namespace NS [flags] FILE|DIR|- ...")
	conn.register(fs, nats.DefaultURL)
	ns := fs.String("namespace", env("MEMINDEX_NAMESPACE", ""), "namespace the messages go to (MEMINDEX_NAMESPACE)")
	format := fs.String("format", "auto", "openclaw (OpenClaw session transcripts), jsonl (one JSON object a line, read through --map), or auto: each file by its first line")
	mapSpec := fs.String("map", "", `jsonl: where each field comes from, e.g. 'text=.content,speaker=.author.name,sessionKey="chat",sessionId=.conversation_id' (fields: sessionKey sessionId seq id role speaker text timestamp; a path .a.b[0], .a[] or .["key"], a "constant", or nothing to unmap; an unnamed field reads the key of its own name)`)
	sessionKey := fs.String("session-key", importer.DefaultSessionKey, "openclaw: the sessionKey of sessions no sessions.json beside the transcript names")
	toolResults := fs.Bool("tool-results", false, "openclaw: import tool results as role tool (speaker: the tool) instead of skipping them; keep the same setting on every import of a history, as it moves the seqs after them")
	dryRun := fs.Bool("dry-run", false, "parse and validate only: print the events that would be sent (JSONL, on stdout) and the summary (on stderr); connect to nothing")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	maxPending := fs.Int("max-pending", 4096, "unacknowledged publishes in flight")
	eventMessages := fs.Int("event-messages", importer.DefaultEventMessages, fmt.Sprintf("most messages in one event: messages of a session go out as one messages event, other sessions' between them or not (1 to %d; 1: one event a message)", memindex.MaxEventMessages))
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return fmt.Errorf("name the transcripts: files, directories (walked for *.jsonl), or - for stdin")
	}
	if *eventMessages < 1 || *eventMessages > memindex.MaxEventMessages {
		return fmt.Errorf("--event-messages %d: want 1 to %d", *eventMessages, memindex.MaxEventMessages)
	}
	cfg := importer.Config{Namespace: *ns, SessionKey: *sessionKey, ToolResults: *toolResults, EventMessages: *eventMessages,
		MaxPending: *maxPending, AckTimeout: conn.Timeout,
		Problem: func(p importer.Problem) { fmt.Fprintln(stderr, p) }}
	switch *format {
	case "auto", "":
	case "openclaw", "jsonl":
		cfg.Format = importer.Format(*format)
	default:
		return fmt.Errorf("--format %q is not openclaw, jsonl or auto", *format)
	}
	if *mapSpec != "" {
		if cfg.Mapping, err = importer.ParseMapping(*mapSpec); err != nil {
			return err
		}
	}
	if *ns == "" {
		return fmt.Errorf("--namespace is required (or MEMINDEX_NAMESPACE)")
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	ins, err := importer.Inputs(pos, stdin)
	if err != nil {
		return err
	}
	var bar *progressbar.ProgressBar // nil: no bar (not a terminal, or --json)
	if isTerminal(stderr) && !*asJSON {
		var size int64
		for _, in := range ins {
			size += in.Size
		}
		bar = publishBar(stderr, size)
		bar.Describe("0 messages")
		cfg.Read = func(n int64) { _ = bar.Add64(n) }
		cfg.Acked = func(n int64) { bar.Describe(fmt.Sprintf("%d messages", n)) }
	}
	var sum importer.Summary
	if *dryRun {
		sum, err = importer.DryRun(ctx, ins, cfg, stdout)
	} else {
		var nc *nats.Conn
		if nc, err = conn.Connect("memindex import"); err != nil {
			if bar != nil {
				endBar(bar, stderr, false)
			}
			return err
		}
		defer nc.Close()
		sum, err = importer.Run(ctx, nc, ins, cfg)
	}
	if bar != nil {
		endBar(bar, stderr, err == nil && ctx.Err() == nil)
	}
	if err != nil {
		return err
	}
	out := stdout
	if *dryRun {
		out = stderr // stdout holds the events
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			return err
		}
	} else {
		printImportSummary(out, sum)
	}
	if sum.BadLines > 0 || sum.BadFiles > 0 || sum.Failed > 0 {
		return fmt.Errorf("%d bad lines, %d bad files, %d publishes failed (each named above)", sum.BadLines, sum.BadFiles, sum.Failed)
	}
	return nil
}

// printImportSummary prints what an import found and did, a few lines.
func printImportSummary(w io.Writer, s importer.Summary) {
	if s.DryRun {
		fmt.Fprintf(w, "dry run: %s in %s from %s would be sent (nothing was)\n",
			plural(s.Messages, "message"), plural(int64(s.Sessions), "session"), plural(int64(s.Files), "file"))
	} else {
		fmt.Fprintf(w, "imported %s in %s from %s: %d stored, %d already held, %d failed, in %.2fs; last stream seq %d\n",
			plural(s.Messages, "message"), plural(int64(s.Sessions), "session"), plural(int64(s.Files), "file"),
			s.Published, s.Duplicates, s.Failed, s.Seconds, s.LastSeq)
	}
	var skipped []string
	var n int64
	for _, r := range s.SkippedReasons() {
		skipped = append(skipped, fmt.Sprintf("%s %d", r, s.Skipped[r]))
		n += s.Skipped[r]
	}
	if n > 0 {
		fmt.Fprintf(w, "skipped %d records: %s\n", n, strings.Join(skipped, ", "))
	}
	if s.BadLines > 0 || s.BadFiles > 0 {
		fmt.Fprintf(w, "not imported: %d bad lines, %d bad files\n", s.BadLines, s.BadFiles)
	}
}

// plural is "1 file", "2 files".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
