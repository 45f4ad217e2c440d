package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
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
	// header ({"type":"session","id":...}) is FormatOpenClaw, a line that
	// DefaultMapping makes a message FormatJSONL, anything else a bad file
	// (one problem, not one a line). With a Mapping given, every input is
	// FormatJSONL.
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

	// EventMessages is the most messages Run and DryRun put in one event:
	// messages of one session go out as one messages event, other
	// sessions' between them or not
	// (client.Grouper), which the stream and the workers take in for about the cost
	// of one message. 0: DefaultEventMessages; 1: one message event a
	// message.
	EventMessages int

	// MaxPending bounds Run's publishes in flight (0: 4096); AckTimeout
	// bounds the wait for each acknowledgement (0: client's default).
	MaxPending int
	AckTimeout time.Duration

	// Read, when set, is told the bytes of each line read; Acked, how many
	// messages the stream acknowledged so far (Run only); Problem, each
	// bad line or file as it is found. Parse and DryRun call them on the
	// caller's goroutine; Run from two, never at once.
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
	if c.EventMessages < 0 || c.EventMessages > memindex.MaxEventMessages {
		return fmt.Errorf("event messages %d: want 1 to %d (0: %d): %w", c.EventMessages, memindex.MaxEventMessages, DefaultEventMessages, ErrConfig)
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

// DryRun is Parse writing each event to w as the JSON line Run would
// publish (`memindex publish` takes them as they are).
func DryRun(ctx context.Context, ins []Input, cfg Config, w io.Writer) (Summary, error) {
	enc := json.NewEncoder(w)
	g := client.NewGrouper(cfg.eventMessages(), func(ev memindex.Event, _ Message, _ int) error { return enc.Encode(ev) })
	sum, err := Parse(ctx, ins, cfg, func(m Message) error { return g.Add(m.Event, m) })
	if err == nil {
		err = g.Flush()
	}
	sum.DryRun = true
	return sum, err
}

// Run is Parse publishing the messages on nc with one client.PublishLines
// stream, at most MaxPending unacknowledged, in events of up to
// EventMessages messages (PublishLines groups them, client.Grouper), with
// the Nats-Msg-Id rule of `memindex publish`: a message event's is
// "<namespace>/<sessionKey>/<sessionId>/<seq>", a messages event's the
// hash of its payload, the same on every run over the same history.
// Published, Duplicates, Failed and Acked count messages. Parsing runs on a
// goroutine of Run's while the caller's publishes, so the callbacks of
// Config may be called from either, never two at once. A failed publish
// is reported as a Problem at its source line. The error is Parse's, or
// client.ErrNoWorker when no stream takes the namespace's subject, or the
// stream's refusal of the first 100 messages when it took none of them.
func Run(ctx context.Context, nc *nats.Conn, ins []Input, cfg Config) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 4096
	}
	if err := streamTakes(ctx, nc, cfg.Namespace, cfg.AckTimeout); err != nil {
		return Summary{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// The callbacks never overlap: the parser's (Read, Problem) and the
	// publisher's (Acked, Problem) take cb.
	var cb sync.Mutex
	locked := func(f func()) { cb.Lock(); defer cb.Unlock(); f() }
	user := cfg
	cfg.Read, cfg.Acked = nil, nil
	if user.Read != nil {
		cfg.Read = func(n int64) { locked(func() { user.Read(n) }) }
	}
	cfg.Problem = func(p Problem) {
		if user.Problem != nil {
			locked(func() { user.Problem(p) })
		}
	}

	// origins[i] is where the i-th message line came from.
	type origin struct{ file, line int32 }
	var (
		mu      sync.Mutex
		origins []origin
		files   []string
	)
	pr, pw := io.Pipe()
	var parsed Summary
	var parseErr error
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		enc := json.NewEncoder(pw) // one Write a line
		parsed, parseErr = Parse(ctx, ins, cfg, func(m Message) error {
			mu.Lock()
			if len(files) == 0 || files[len(files)-1] != m.File {
				files = append(files, m.File)
			}
			origins = append(origins, origin{int32(len(files) - 1), int32(m.Line)})
			mu.Unlock()
			return enc.Encode(m.Event)
		})
		pw.CloseWithError(parseErr) // nil: the publisher reads EOF
	}()

	var late []Problem // failed publishes, added to the summary at the end
	var taken int64
	res, pubErr := client.PublishLines(ctx, nc, pr, client.LinesConfig{
		Namespace: cfg.Namespace, MaxPending: cfg.MaxPending, AckTimeout: cfg.AckTimeout,
		EventMessages: cfg.eventMessages(),
		Problem: func(line int, err error) {
			mu.Lock()
			o := origins[line-1]
			pr := Problem{File: files[o.file], Line: int(o.line), Reason: err.Error()}
			mu.Unlock()
			late = append(late, pr)
			cfg.Problem(pr)
			if taken == 0 && len(late) == 100 {
				cancel(fmt.Errorf("the stream took none of the first 100 messages: %w", err))
			}
		},
		Acked: func(n int64) {
			taken = n
			if user.Acked != nil {
				locked(func() { user.Acked(n) })
			}
		},
	})
	pr.CloseWithError(errPublishStopped) // unblocks the parser if publishing ended early
	<-done

	parsed.Published, parsed.Duplicates, parsed.Failed, parsed.LastSeq = res.Published, res.Duplicates, res.Failed+res.Rejected, res.LastSeq
	for _, pr := range late {
		if len(parsed.Problems) < maxProblems {
			parsed.Problems = append(parsed.Problems, pr)
		}
	}
	parsed.Seconds = time.Since(start).Seconds()
	if parsed.Seconds > 0 {
		parsed.PerSecond = float64(parsed.Published) / parsed.Seconds
	}
	switch {
	case context.Cause(ctx) != nil:
		return parsed, context.Cause(ctx)
	case parseErr != nil && !errors.Is(parseErr, errPublishStopped):
		return parsed, parseErr
	case pubErr != nil:
		return parsed, fmt.Errorf("publish: %w", pubErr)
	}
	return parsed, nil
}

// errPublishStopped ends the parse when publishing stopped before it.
var errPublishStopped = errors.New("publishing stopped")

// streamTakes checks that a stream takes the namespace's event subject:
// without one every publish would fail, one line at a time.
func streamTakes(ctx context.Context, nc *nats.Conn, ns string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = client.DefaultRequestTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	subj := memindex.EventSubject(ns)
	_, err = js.StreamNameBySubject(ctx, subj)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return fmt.Errorf("no stream takes %s: %w", subj, client.ErrNoWorker)
	case err != nil:
		return fmt.Errorf("find the stream of %s: %w", subj, err)
	}
	return nil
}

// DefaultEventMessages is Config.EventMessages when it is 0.
const DefaultEventMessages = client.DefaultGroupMessages

// eventMessages is EventMessages with its default.
func (c Config) eventMessages() int {
	if c.EventMessages == 0 {
		return DefaultEventMessages
	}
	return c.EventMessages
}
