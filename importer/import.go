package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
)

// Format is the kind of file an input is.
type Format string

// Formats of Config.Format.
const (
	// FormatAuto decides per input from its first line: an OpenClaw session
	// header ({"type":"session","id":...}) is FormatOpenClaw, anything else
	// FormatJSONL. With a Mapping given, every input is FormatJSONL.
	FormatAuto Format = ""
	// FormatOpenClaw is an OpenClaw session transcript (openclaw.go).
	FormatOpenClaw Format = "openclaw"
	// FormatJSONL is one JSON object a line, read through a Mapping.
	FormatJSONL Format = "jsonl"
)

// DefaultSessionKey is the sessionKey of an OpenClaw session that no
// sessions.json names, unless Config.SessionKey says otherwise.
const DefaultSessionKey = "openclaw"

// maxProblems bounds Summary.Problems; Config.Problem sees every one.
const maxProblems = 1000

// Config configures Parse, DryRun and Run.
type Config struct {
	// Namespace is the namespace of every message (required).
	Namespace string
	// Format of the inputs; FormatAuto decides per input.
	Format Format
	// Mapping reads generic JSONL lines; nil is DefaultMapping. A Mapping
	// given makes FormatAuto mean FormatJSONL.
	Mapping *Mapping
	// SessionKey is the sessionKey of OpenClaw sessions no sessions.json
	// names ("": DefaultSessionKey).
	SessionKey string
	// ToolResults imports OpenClaw toolResult messages as role "tool"
	// (speaker: the tool's name) instead of skipping them. It changes the
	// seq of the messages after the first tool result, so import a
	// history with the same setting every time.
	ToolResults bool

	// MaxPending bounds Run's publishes in flight (0: 4096); AckTimeout
	// bounds the wait for each acknowledgement (0: client's default).
	MaxPending int
	AckTimeout time.Duration

	// Read, when set, is told the bytes of each line read; Acked, how many
	// messages the stream acknowledged so far (Run only); Problem, each
	// bad line or file as it is found. All are called on the caller's
	// goroutine.
	Read    func(bytes int64)
	Acked   func(total int64)
	Problem func(Problem)
}

// Validate checks the namespace and the format.
func (c Config) Validate() error {
	if !memindex.ValidNamespace(c.Namespace) {
		return fmt.Errorf("namespace %q is not 1-64 characters of [A-Za-z0-9_-]: %w", c.Namespace, ErrConfig)
	}
	switch c.Format {
	case FormatAuto, FormatJSONL:
	case FormatOpenClaw:
		if c.Mapping != nil {
			return fmt.Errorf("a mapping is for the jsonl format, not openclaw: %w", ErrConfig)
		}
	default:
		return fmt.Errorf("format %q is not openclaw, jsonl or empty (auto): %w", c.Format, ErrConfig)
	}
	if c.SessionKey != "" {
		if err := (&memindex.Event{Type: memindex.TypeSessionDeleted, SessionKey: c.SessionKey}).Validate(); err != nil {
			return fmt.Errorf("session key: %w: %w", err, ErrConfig)
		}
	}
	return nil
}

// Message is one message event an import makes and where it came from.
type Message struct {
	Event memindex.Event
	File  string
	Line  int
}

// Problem is a line (or, with Line 0, a whole file) that was not imported,
// and why.
type Problem struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Reason string `json:"reason"`
}

// String returns "file:line: reason" (or "file: reason").
func (p Problem) String() string {
	if p.Line == 0 {
		return p.File + ": " + p.Reason
	}
	return p.File + ":" + strconv.Itoa(p.Line) + ": " + p.Reason
}

// Summary is what an import found and did (`memindex import --json`).
type Summary struct {
	DryRun bool `json:"dryRun,omitempty"`
	// Files read; Sessions that gave at least one message; Messages made
	// (valid events, sent or, in a dry run, printed).
	Files    int   `json:"files"`
	Sessions int   `json:"sessions"`
	Messages int64 `json:"messages"`
	// Skipped counts the records deliberately not imported, by reason
	// (an OpenClaw entry type such as "compaction", or "message:toolResult",
	// "message:tool-calls", "message:no-text", "blank").
	Skipped map[string]int64 `json:"skipped"`
	// BadLines and BadFiles count what could not be imported; Problems
	// lists them (the first 1000).
	BadLines int64     `json:"badLines"`
	BadFiles int       `json:"badFiles"`
	Problems []Problem `json:"problems,omitempty"`
	// What the stream answered (Run only): stored anew, already held
	// (de-duplicated by Nats-Msg-Id), failed; the last stream sequence.
	Published  int64   `json:"published"`
	Duplicates int64   `json:"duplicates"`
	Failed     int64   `json:"failed"`
	LastSeq    uint64  `json:"lastSeq,omitempty"`
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"perSecond"`
}

// SkippedReasons returns the reasons of Skipped, sorted.
func (s *Summary) SkippedReasons() []string {
	rs := make([]string, 0, len(s.Skipped))
	for r := range s.Skipped {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	return rs
}

// Parse reads every input and calls emit with each valid message event in
// input order; it connects to nothing. A bad line or file is reported
// (Config.Problem, Summary) and the rest continue. The error is the
// configuration's, ctx's, emit's or a read's.
func Parse(ctx context.Context, ins []Input, cfg Config, emit func(Message) error) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	p := newParser(cfg, emit)
	start := time.Now()
	for _, in := range ins {
		if err := ctx.Err(); err != nil {
			return p.sum, err
		}
		if err := p.input(in); err != nil {
			return p.sum, err
		}
	}
	p.sum.Seconds = time.Since(start).Seconds()
	return p.sum, nil
}

// DryRun is Parse writing each message event to w as the JSON line Run
// would publish (`memindex publish` takes them as they are).
func DryRun(ctx context.Context, ins []Input, cfg Config, w io.Writer) (Summary, error) {
	enc := json.NewEncoder(w)
	sum, err := Parse(ctx, ins, cfg, func(m Message) error { return enc.Encode(m.Event) })
	sum.DryRun = true
	return sum, err
}

// Run is Parse publishing the messages on nc with client.PublishLines, at
// most MaxPending unacknowledged, every one with the Nats-Msg-Id
// "<namespace>/<sessionKey>/<sessionId>/<seq>". A failed publish is
// reported as a Problem at its source line. The error is Parse's, or the
// stream's refusal to take any of it (client.ErrNoWorker when no stream
// takes the subject).
func Run(ctx context.Context, nc *nats.Conn, ins []Input, cfg Config) (Summary, error) {
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 4096
	}
	var (
		buf     bytes.Buffer
		origins []Message // the batch's messages without their text
		acked   int64
		sum     Summary
		report  = cfg.Problem
	)
	if report == nil {
		report = func(Problem) {}
	}
	var late []Problem // failed publishes, added to the summary at the end
	var firstErr error // the batch's first failed publish
	flush := func() error {
		if len(origins) == 0 {
			return nil
		}
		res, err := client.PublishLines(ctx, nc, &buf, client.LinesConfig{
			Namespace: cfg.Namespace, MaxPending: cfg.MaxPending, AckTimeout: cfg.AckTimeout,
			Problem: func(line int, err error) {
				o := origins[line-1]
				pr := Problem{File: o.File, Line: o.Line, Reason: err.Error()}
				late = append(late, pr)
				report(pr)
				if firstErr == nil {
					firstErr = err
				}
			},
			Acked: func(n int64) {
				if cfg.Acked != nil {
					cfg.Acked(acked + n)
				}
			},
		})
		buf.Reset()
		origins = origins[:0]
		sum.Published += res.Published
		sum.Duplicates += res.Duplicates
		sum.Failed += res.Failed + res.Rejected
		sum.LastSeq = max(sum.LastSeq, res.LastSeq)
		acked += res.Published + res.Duplicates
		if err != nil {
			return err
		}
		batchErr := firstErr
		firstErr = nil
		if res.Published+res.Duplicates == 0 && batchErr != nil {
			// Nothing of a whole batch was taken: stop, saying why once,
			// rather than failing every batch after it.
			if errors.Is(batchErr, jetstream.ErrNoStreamResponse) || errors.Is(batchErr, nats.ErrNoResponders) {
				return fmt.Errorf("no stream takes %s: %w", memindex.EventSubject(cfg.Namespace), client.ErrNoWorker)
			}
			return fmt.Errorf("the stream took none of %d messages: %w", res.Failed, batchErr)
		}
		return nil
	}
	start := time.Now()
	parsed, err := Parse(ctx, ins, cfg, func(m Message) error {
		if err := json.NewEncoder(&buf).Encode(m.Event); err != nil {
			return err
		}
		origins = append(origins, Message{File: m.File, Line: m.Line})
		if len(origins) >= cfg.MaxPending {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	parsed.Published, parsed.Duplicates, parsed.Failed, parsed.LastSeq = sum.Published, sum.Duplicates, sum.Failed, sum.LastSeq
	for _, pr := range late {
		if len(parsed.Problems) < maxProblems {
			parsed.Problems = append(parsed.Problems, pr)
		}
	}
	parsed.Seconds = time.Since(start).Seconds()
	if parsed.Seconds > 0 {
		parsed.PerSecond = float64(parsed.Published) / parsed.Seconds
	}
	return parsed, err
}
