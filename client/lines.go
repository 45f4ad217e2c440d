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
	obj, err := parseLine(line)
	if err != nil {
		if raw && namespace != "" {
			m := nats.NewMsg(memindex.EventSubject(namespace))
			m.Data = append([]byte(nil), line...)
			return m, nil
		}
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	ns := obj.str("namespace")
	if ns == "" {
		ns = namespace
	}
	if ns == "" {
		return nil, errors.New("no namespace: the line has none and no default namespace is set")
	}
	if !memindex.ValidNamespace(ns) && !raw {
		return nil, fmt.Errorf("namespace %q is not 1-64 characters of [A-Za-z0-9_-]", ns)
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
			return nil, err
		}
	}
	m := nats.NewMsg(memindex.EventSubject(ns))
	m.Data = data
	m.Header.Set(nats.MsgIdHdr, lineMsgID(ns, obj, data))
	return m, nil
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
	// Settled, when set, is told of each line the stream acknowledged,
	// and whether it already held it (a duplicate), on PublishLines'
	// goroutine before the Acked of its round.
	Settled func(line int, duplicate bool)
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
	if cfg.Read == nil {
		cfg.Read = func(int64) {}
	}
	if cfg.Acked == nil {
		cfg.Acked = func(int64) {}
	}
	if cfg.Settled == nil {
		cfg.Settled = func(int, bool) {}
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
	type sent struct {
		line int
		f    jetstream.PubAckFuture
	}
	var futures []sent
	settle := func() {
		for _, s := range futures {
			select {
			case ack := <-s.f.Ok():
				if ack.Duplicate {
					res.Duplicates++
				} else {
					res.Published++
				}
				res.LastSeq = max(res.LastSeq, ack.Sequence)
				cfg.Settled(s.line, ack.Duplicate)
			case err := <-s.f.Err():
				res.Failed++
				problem(s.line, fmt.Errorf("publish to %s failed: %w", s.f.Msg().Subject, err))
			}
		}
		futures = futures[:0]
		cfg.Acked(res.Published + res.Duplicates)
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
		msg, err := LineMsg(b, cfg.Namespace, cfg.Raw)
		if err != nil {
			res.Rejected++
			problem(line, fmt.Errorf("%w (not published)", err))
			continue
		}
		if cfg.Inject != nil {
			cfg.Inject(msg)
		}
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			res.Failed++
			problem(line, fmt.Errorf("publish: %w", err))
			continue
		}
		futures = append(futures, sent{line, f})
		if len(futures) >= cfg.MaxPending {
			settle()
		}
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
