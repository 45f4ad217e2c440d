package client

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// LineMsg turns one JSONL line into a NATS message on its namespace's event
// subject: the line's own "namespace", else namespace. Unless raw, it adds
// "type":"message" and the namespace when the line lacks them, and refuses
// an invalid namespace; with raw the line is sent as it is (a line that is
// no JSON object too, when namespace is set). Either way the message
// carries the Nats-Msg-Id LineMsgID gives, so a re-publish is de-duplicated.
func LineMsg(line []byte, namespace string, raw bool) (*nats.Msg, error) {
	m, _, err := lineMsg(line, namespace, raw)
	return m, err
}

// lineMsg is LineMsg, also returning the line's object (nil when raw
// sends a line that is no JSON object).
func lineMsg(line []byte, namespace string, raw bool) (*nats.Msg, lineObject, error) {
	obj, err := parseLine(line)
	if err != nil {
		if raw && namespace != "" {
			m := nats.NewMsg(memindex.EventSubject(namespace))
			m.Data = append([]byte(nil), line...)
			return m, nil, nil
		}
		return nil, nil, fmt.Errorf("not a JSON object: %v", err)
	}
	ns := obj.str("namespace")
	if ns == "" {
		ns = namespace
	}
	if ns == "" {
		return nil, nil, errors.New("no namespace: the line has none and no default namespace is set")
	}
	if !memindex.ValidNamespace(ns) && !raw {
		return nil, nil, fmt.Errorf("namespace %q is not 1-64 characters of [A-Za-z0-9_-]", ns)
	}
	var data []byte
	if raw {
		data = append(data, line...) // the scanner reuses line's bytes
	} else {
		if obj.get("type") == nil {
			obj.set("type", []byte(`"message"`))
		}
		if obj.get("namespace") == nil {
			v, _ := json.Marshal(ns)
			obj.set("namespace", v)
		}
		if data, err = obj.marshal(make([]byte, 0, len(line)+48)); err != nil {
			return nil, nil, err
		}
	}
	m := nats.NewMsg(memindex.EventSubject(ns))
	m.Data = data
	m.Header.Set(nats.MsgIdHdr, lineMsgID(ns, obj, data))
	return m, obj, nil
}

// lineMsgID is the de-duplication id of a line: "<namespace>/<eventId>"
// when the line has an eventId; else MsgID's rule (a message's session
// position, or the hash of the payload).
func lineMsgID(ns string, obj lineObject, data []byte) string {
	if id := obj.str("eventId"); id != "" {
		return ns + "/" + id
	}
	if t := obj.str("type"); t == "" || t == memindex.TypeMessage {
		if seq := obj.get("seq"); seq != nil && obj.str("sessionKey") != "" {
			return ns + "/" + obj.str("sessionKey") + "/" + obj.str("sessionId") + "/" + string(seq)
		}
	}
	h := sha256.Sum256(data)
	return ns + "/" + hex.EncodeToString(h[:16])
}

// LinesResult is what PublishLines did (`memindex publish --json` prints
// it).
type LinesResult struct {
	Published  int64   `json:"published"`
	Duplicates int64   `json:"duplicates"`
	Failed     int64   `json:"failed"`
	Rejected   int64   `json:"rejected"`
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"perSecond"`
	LastSeq    uint64  `json:"lastSeq"`
}

// LinesConfig configures PublishLines.
type LinesConfig struct {
	// Namespace is the namespace of lines that name none; Raw sends lines
	// as they are (see LineMsg).
	Namespace string
	Raw       bool
	// MaxPending bounds the publishes in flight (0: 4096); AckTimeout
	// bounds the wait for each acknowledgement (0: 5 s), so a publish the
	// server refuses fails instead of waiting forever.
	MaxPending int
	AckTimeout time.Duration
	// MaxPendingBytes bounds the payload of the publishes in flight (0:
	// DefaultMaxPendingBytes). nats-server queues a stream's incoming
	// publishes up to 128 MiB and refuses more with 429 "too many
	// requests"; a refused publish is sent again after a pause, with the
	// same Nats-Msg-Id, until publishRetries rounds in a row take none of
	// the refused.
	MaxPendingBytes int
	// Inject, when set, sees each message before it is sent (trace
	// context headers).
	Inject func(*nats.Msg)
	// Problem, when set, is told of each line that was not published (or
	// whose publish failed) and why; line counts from 1.
	Problem func(line int, err error)
	// Read, when set, is told the bytes of each line read (with its
	// newline); Acked, after each round of acknowledgements, how many
	// events are acknowledged so far (published or duplicate). Both are
	// called on PublishLines' goroutine, for a progress bar.
	Read  func(bytes int64)
	Acked func(total int64)
	// EventMessages, above 1, groups consecutive message lines of one
	// session (each valid as a worker checks it, with no eventId) into
	// messages events of up to that many messages (Grouper); a line
	// that is not one goes out alone, as it would without. Not with Raw.
	// The counts of LinesResult are then of lines, a group's each.
	EventMessages int
}

// DefaultMaxPendingBytes is LinesConfig.MaxPendingBytes when none is given.
const DefaultMaxPendingBytes = 16 << 20

// publishRetries is how many rounds in a row in which the server took
// none of them a publisher's refused publishes (429, the stream's load)
// are sent again, after pauses of 50 ms doubling to 2 s; a round in
// which it took some starts the count and the pauses over. Counting
// every round instead gave up on a stream that was taking them, only
// slowly (a loaded machine: 40 events of 60 KiB into a 100 KiB queue).
const publishRetries = 8

// tooManyRequests reports a publish refused for the stream's load.
func tooManyRequests(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 429
}

// PublishLines publishes every non-blank JSONL line of r as an event
// (LineMsg), asynchronously with at most MaxPending unacknowledged. A line
// that is no valid event is counted as rejected and the lines around it are
// still sent. It returns when every publish is acknowledged or failed (or
// ctx ends); the error is only r's.
func PublishLines(ctx context.Context, nc *nats.Conn, r io.Reader, cfg LinesConfig) (LinesResult, error) {
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 4096
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = DefaultRequestTimeout
	}
	if cfg.MaxPendingBytes <= 0 {
		cfg.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if cfg.Read == nil {
		cfg.Read = func(int64) {}
	}
	if cfg.Acked == nil {
		cfg.Acked = func(int64) {}
	}
	problem := cfg.Problem
	if problem == nil {
		problem = func(int, error) {}
	}
	var res LinesResult
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(cfg.MaxPending), jetstream.WithPublishAsyncTimeout(cfg.AckTimeout))
	if err != nil {
		return res, err
	}
	start := time.Now()
	// sent is a publish in flight: the line it came from and, for a
	// messages event of grouped lines, the first of them and how many.
	type sent struct {
		line, n int
		f       jetstream.PubAckFuture
	}
	var futures []sent
	pendingBytes := 0
	// publish sends msg, made of n lines from line on; a publish that cannot
	// start is counted failed.
	publish := func(msg *nats.Msg, line, n int) (sent, bool) {
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			res.Failed += int64(n)
			problem(line, fmt.Errorf("publish: %w%s", err, grouped(n)))
			return sent{}, false
		}
		return sent{line, n, f}, true
	}
	failed := func(s sent, err error) {
		res.Failed += int64(s.n)
		problem(s.line, fmt.Errorf("publish to %s failed: %w%s", s.f.Msg().Subject, err, grouped(s.n)))
	}
	settle := func() {
		pending := futures
		type refusal struct {
			s   sent
			err error
		}
		for stalled := 0; len(pending) > 0; {
			var refused []refusal
			took := false
			for _, s := range pending {
				select {
				case ack := <-s.f.Ok():
					took = true
					if ack.Duplicate {
						res.Duplicates += int64(s.n)
					} else {
						res.Published += int64(s.n)
					}
					res.LastSeq = max(res.LastSeq, ack.Sequence)
				case err := <-s.f.Err():
					if tooManyRequests(err) {
						refused = append(refused, refusal{s, err})
						continue
					}
					failed(s, err)
				}
			}
			pending = nil
			if len(refused) == 0 {
				break
			}
			if took {
				stalled = 0
			} else {
				stalled++
			}
			if stalled > publishRetries || ctx.Err() != nil {
				for _, r := range refused {
					failed(r.s, r.err)
				}
				break
			}
			select { // the stream is busy: let it drain
			case <-time.After(min(50*time.Millisecond<<max(stalled-1, 0), 2*time.Second)):
			case <-ctx.Done():
			}
			for _, r := range refused { // the same message, so the same Nats-Msg-Id
				if s, ok := publish(r.s.f.Msg(), r.s.line, r.s.n); ok {
					pending = append(pending, s)
				}
			}
		}
		futures, pendingBytes = futures[:0], 0
		cfg.Acked(res.Published + res.Duplicates)
	}
	send := func(msg *nats.Msg, line, n int) {
		if cfg.Inject != nil {
			cfg.Inject(msg)
		}
		size := len(msg.Data) + len(msg.Subject)
		if len(futures) > 0 && pendingBytes+size > cfg.MaxPendingBytes {
			settle()
		}
		s, ok := publish(msg, line, n)
		if !ok {
			return
		}
		futures = append(futures, s)
		pendingBytes += size
		if len(futures) >= cfg.MaxPending {
			settle()
		}
	}
	// With EventMessages, valid message lines are grouped (Grouper), runs
	// of several sessions open at once; a line that cannot join goes out
	// after every open run. A group of
	// one line goes out as that line's own message, as without grouping
	// (its bytes are the ones groupable checked), with the Nats-Msg-Id
	// EventMsg would give it: re-encoding it cost a third of the
	// publisher's CPU a line where no two consecutive lines are of one
	// session (BENCHMARKS.md, twenty-third session).
	type groupTag struct {
		line int
		msg  *nats.Msg
	}
	var group *Grouper[groupTag]
	if cfg.EventMessages > 1 && !cfg.Raw {
		group = NewGrouper(cfg.EventMessages, func(ev memindex.Event, first groupTag, n int) error {
			msg := first.msg
			if n == 1 {
				msg.Header.Set(nats.MsgIdHdr, MsgID(ev, msg.Data))
			} else {
				var err error
				if msg, err = EventMsg(ev); err != nil {
					res.Rejected += int64(n)
					problem(first.line, fmt.Errorf("%w (not published)%s", err, grouped(n)))
					return nil
				}
			}
			send(msg, first.line, n)
			return nil
		})
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), memindex.MaxEventBytes+1)
	line := 0
	for sc.Scan() && ctx.Err() == nil {
		line++
		b := sc.Bytes()
		cfg.Read(int64(len(b)) + 1)
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		msg, obj, err := lineMsg(b, cfg.Namespace, cfg.Raw)
		if err != nil {
			res.Rejected++
			problem(line, fmt.Errorf("%w (not published)", err))
			continue
		}
		if group != nil {
			if e, ok := groupable(msg, obj); ok {
				_ = group.Add(e, groupTag{line, msg})
				continue
			}
			_ = group.Flush()
		}
		send(msg, line, 1)
	}
	if group != nil {
		_ = group.Flush()
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(cfg.AckTimeout + time.Second):
	case <-ctx.Done():
	}
	settle()
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.PerSecond = float64(res.Published) / res.Seconds
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("read line %d: %w", line+1, err)
	}
	return res, nil
}

// MemoryFileEvents walks dir for .md files and returns one file.upserted
// event per file, its path relative to dir (with forward slashes), for the
// project dirPath ("" for global memory). Paths matching one of excludes
// (filepath.Match globs on the relative path; a matching directory is
// skipped whole: ExcludedPath) are left out. A file too big for one event is an error.
func MemoryFileEvents(dir, dirPath string, excludes []string) ([]memindex.Event, error) {
	if err := CheckExcludes(excludes); err != nil {
		return nil, err
	}
	var evs []memindex.Event
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if rel != "." && matchesExclude(rel, excludes) { // the folder itself is never excluded
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !IsMemoryFile(path) {
			return nil
		}
		ev, err := MemoryFileEvent(dir, rel, dirPath)
		if err != nil {
			return err
		}
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("memory files under %s: %w", dir, err)
	}
	return evs, nil
}

// groupable reports whether the message made of a line, whose object is
// obj, may join a group: a message event without an eventId, valid as a
// worker checks it (returned). Anything else goes out alone, so a line a
// worker would refuse is dead-lettered alone, not with its neighbours.
func groupable(msg *nats.Msg, obj lineObject) (memindex.Event, bool) {
	if obj == nil || obj.get("eventId") != nil {
		return memindex.Event{}, false
	}
	if t := obj.str("type"); t != "" && t != memindex.TypeMessage {
		return memindex.Event{}, false
	}
	e, err := memindex.DecodeEvent(msg.Data)
	if err != nil || e.Type != memindex.TypeMessage {
		return memindex.Event{}, false
	}
	return e, true
}

// EventMsg turns ev, valid, into the NATS message Publish sends: its JSON
// on its namespace's event subject, with MsgID's Nats-Msg-Id.
func EventMsg(ev memindex.Event) (*nats.Msg, error) {
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(memindex.EventSubject(ev.Namespace))
	m.Data = data
	m.Header.Set(nats.MsgIdHdr, MsgID(ev, data))
	return m, nil
}

// grouped says, in a problem of a group of n lines, that the others went
// with the first (nothing when n is 1).
func grouped(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf(" (a messages event of %d lines of its session, this the first; other sessions' lines may come between them)", n)
}
