package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"memindex"
)

// parser is the state of one Parse: the summary, the sessions seen with
// the seqs they used, the sessions.json of each directory.
type parser struct {
	cfg      Config
	emit     func(Message) error
	sum      Summary
	sessions map[sessionRef]*session
	keys     map[string]map[string]string // dir → sessionId → sessionKey
}

type sessionRef struct{ key, id string }

// session is what one session used so far: its messages, the seq of each
// (and the line that gave it), the file it came from.
type session struct {
	used     map[int64]int
	file     string
	messages int64
}

func newParser(cfg Config, emit func(Message) error) *parser {
	if cfg.Mapping == nil {
		cfg.Mapping = DefaultMapping()
	} else if cfg.Format == FormatAuto {
		cfg.Format = FormatJSONL
	}
	if cfg.SessionKey == "" {
		cfg.SessionKey = DefaultSessionKey
	}
	return &parser{cfg: cfg, emit: emit, sum: Summary{Skipped: map[string]int64{}},
		sessions: map[sessionRef]*session{}, keys: map[string]map[string]string{}}
}

// problem records a bad line (or file, line 0).
func (p *parser) problem(file string, line int, format string, args ...any) {
	pr := Problem{File: file, Line: line, Reason: fmt.Sprintf(format, args...)}
	if line == 0 {
		p.sum.BadFiles++
	} else {
		p.sum.BadLines++
	}
	if len(p.sum.Problems) < maxProblems {
		p.sum.Problems = append(p.sum.Problems, pr)
	}
	if p.cfg.Problem != nil {
		p.cfg.Problem(pr)
	}
}

func (p *parser) skip(reason string) { p.sum.Skipped[reason]++ }

// input reads one input to its end in its format.
func (p *parser) input(in Input) error {
	rc, err := in.open()
	if err != nil {
		p.problem(in.Name, 0, "%v", err)
		return nil
	}
	defer rc.Close()
	p.sum.Files++
	lr := newLineReader(rc, p.cfg.Read)
	first, n, err := firstLine(lr)
	switch {
	case err == io.EOF:
		p.problem(in.Name, 0, "empty: no line to import")
		return nil
	case errors.Is(err, errLineTooLong):
		p.problem(in.Name, n, "%v", err)
	case err != nil:
		return fmt.Errorf("read %s line %d: %w", in.Name, n+1, err)
	}
	format := p.cfg.Format
	if format == FormatAuto {
		format = FormatJSONL
		if _, ok := openClawHeader(first); ok {
			format = FormatOpenClaw
		} else if _, err := p.cfg.Mapping.Event(first); err != nil {
			// Neither kind: one problem for the file, not one a line (a
			// directory walk meets other JSONL files too).
			p.problem(in.Name, 0, "neither an OpenClaw transcript (its line %d is no session header) nor JSONL of messages (line %d: %v); to read it, name --format jsonl and a --map", n, n, err)
			return nil
		}
	}
	if format == FormatOpenClaw {
		return p.openClaw(in, lr, first, n)
	}
	return p.jsonl(in, lr, first, n)
}

// firstLine returns the first non-blank line and its number, counting the
// blank lines before it.
func firstLine(lr *lineReader) ([]byte, int, error) {
	return nextLine(lr, nil)
}

// nextLine returns the next non-blank line, counting each blank one in
// p's Skipped when p is set.
func nextLine(lr *lineReader, p *parser) ([]byte, int, error) {
	for {
		b, n, err := lr.next()
		if err != nil {
			return nil, n, err
		}
		if len(bytes.TrimSpace(b)) > 0 {
			return b, n, nil
		}
		if p != nil {
			p.skip("blank")
		}
	}
}

// add validates m (its seq given, or positional when seq is 0) and emits
// it; a message that fails is a bad line.
func (p *parser) add(m Message) error {
	ev := &m.Event
	ev.Type, ev.Namespace = memindex.TypeMessage, p.cfg.Namespace
	ref := sessionRef{ev.SessionKey, ev.SessionID}
	s := p.sessions[ref]
	if s == nil {
		s = &session{used: map[int64]int{}, file: m.File}
		p.sessions[ref] = s
	}
	if ev.Seq == 0 {
		ev.Seq = s.messages + 1 // its position among the session's messages
	}
	if err := ev.Validate(); err != nil {
		p.problem(m.File, m.Line, "%v", err)
		return nil
	}
	if prev, ok := s.used[ev.Seq]; ok {
		p.problem(m.File, m.Line, "seq %d of session %s/%s was already given by line %d of %s", ev.Seq, ev.SessionKey, ev.SessionID, prev, s.file)
		return nil
	}
	s.used[ev.Seq] = m.Line
	if s.messages == 0 {
		p.sum.Sessions++
	}
	s.messages++
	p.sum.Messages++
	return p.emit(m)
}

// decodeObject decodes a line as one JSON object (numbers kept as
// json.Number).
func decodeObject(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("not JSON: data after the object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object but %s", jsonKind(v))
	}
	return obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// itoa formats a seq for messages.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
