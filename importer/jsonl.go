package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"memindex"
)

// jsonl reads generic JSONL through the mapping; first (line n) is read.
func (p *parser) jsonl(in Input, lr *lineReader, first []byte, n int) error {
	line, err := first, error(nil)
	for {
		if err == nil {
			ev, err := p.cfg.Mapping.Event(line)
			if err != nil {
				p.problem(in.Name, n, "%v", err)
			} else if err := p.add(Message{Event: ev, File: in.Name, Line: n}); err != nil {
				return err
			}
		}
		line, n, err = nextLine(lr, p)
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, errLineTooLong):
			p.problem(in.Name, n, "%v", err)
		case err != nil:
			return fmt.Errorf("read %s line %d: %w", in.Name, n+1, err)
		}
	}
}

// Event maps one JSONL line to a message event (without its namespace;
// seq 0 when the line gives none and the mapping does not require one).
// The error says which field is missing or wrong, and where the mapping
// looked for it.
func (m *Mapping) Event(line []byte) (memindex.Event, error) {
	var ev memindex.Event
	obj, err := decodeObject(line)
	if err != nil {
		return ev, err
	}
	for _, f := range mappingFields {
		e, mapped := m.exprs[f]
		if !mapped {
			if f == "text" || f == "sessionKey" || f == "sessionId" {
				return ev, fmt.Errorf("%s is required and not mapped (--map %s=.path or %s=\"constant\")", f, f, f)
			}
			continue
		}
		vals := e.eval(obj)
		if len(vals) == 0 {
			switch {
			case f == "text" || f == "sessionKey" || f == "sessionId" || (f == "seq" && m.explicit[f]):
				return ev, fmt.Errorf("%s: %s is missing", f, e.src)
			default:
				continue
			}
		}
		if err := setField(&ev, f, vals); err != nil {
			return ev, fmt.Errorf("%s: %s %w", f, e.src, err)
		}
	}
	return ev, nil
}

// setField sets field f of ev from the values a path found.
func setField(ev *memindex.Event, f string, vals []any) error {
	if f == "text" {
		ev.Text = joinText(vals)
		if strings.TrimSpace(ev.Text) == "" {
			return errors.New("holds no text")
		}
		return nil
	}
	if len(vals) > 1 {
		return fmt.Errorf("gives %d values, not one", len(vals))
	}
	v := vals[0]
	switch f {
	case "seq":
		n, err := toInt(v)
		if err != nil {
			return err
		}
		if n < 1 {
			return fmt.Errorf("is %d, not a positive integer", n)
		}
		ev.Seq = n
		return nil
	case "timestamp":
		ts, err := toTime(v)
		ev.Timestamp = ts
		return err
	}
	s, err := toString(v)
	if err != nil {
		return err
	}
	switch f {
	case "sessionKey":
		ev.SessionKey = s
	case "sessionId":
		ev.SessionID = s
	case "id":
		ev.ID = s
	case "speaker":
		ev.Speaker = s
	case "role":
		r, ok := normalRole(s)
		if !ok {
			return fmt.Errorf("is %q, not a role (user, assistant, system, tool, or human, ai, bot, model, function)", s)
		}
		ev.Role = r
	}
	return nil
}

// joinText joins the text of the values with newlines: strings, and the
// "text" of objects (parts like {"type":"text","text":...}; parts of other
// types are not text), arrays of those taken apart.
func joinText(vals []any) string {
	var parts []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if strings.TrimSpace(v) != "" {
				parts = append(parts, v)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			if t, ok := v["type"].(string); ok && t != "text" {
				return
			}
			if s, ok := v["text"].(string); ok {
				walk(s)
			}
		}
	}
	for _, v := range vals {
		walk(v)
	}
	return strings.Join(parts, "\n")
}

func toString(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	}
	return "", fmt.Errorf("is %s, not a string or number", jsonKind(v))
}

func toInt(v any) (int64, error) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = strings.TrimSpace(v)
	default:
		return 0, fmt.Errorf("is %s, not an integer", jsonKind(v))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("is %q, not an integer", s)
	}
	return n, nil
}

// toTime reads an RFC 3339 string or a Unix time in seconds, milliseconds,
// microseconds or nanoseconds (told apart by size), as RFC 3339 in UTC.
func toTime(v any) (string, error) {
	switch v := v.(type) {
	case string:
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
		if err != nil {
			return "", fmt.Errorf("is %q, not an RFC 3339 time like 2026-11-30T09:12:00Z", v)
		}
		return t.UTC().Format(time.RFC3339Nano), nil
	case json.Number:
		f, err := v.Float64()
		if err != nil || f <= 0 || math.IsInf(f, 0) {
			return "", fmt.Errorf("is %s, not a Unix time", v)
		}
		i, intErr := v.Int64() // exact, where a float64 is not past 2^53
		if intErr != nil {
			i = int64(f)
		}
		var t time.Time
		switch {
		case f >= 1e17:
			t = time.Unix(0, i)
		case f >= 1e14:
			t = time.UnixMicro(i)
		case f >= 1e11:
			t = time.UnixMilli(i)
		default:
			sec, frac := math.Modf(f)
			t = time.Unix(int64(sec), int64(frac*1e9))
		}
		return t.UTC().Format(time.RFC3339Nano), nil
	}
	return "", fmt.Errorf("is %s, not a time", jsonKind(v))
}

// normalRole maps a role as other tools write it to memindex's.
func normalRole(s string) (string, bool) {
	switch r := strings.ToLower(strings.TrimSpace(s)); r {
	case "", "user", "assistant", "system", "tool":
		return r, true
	case "human":
		return "user", true
	case "ai", "bot", "model":
		return "assistant", true
	case "function", "toolresult", "tool_result":
		return "tool", true
	case "developer":
		return "system", true
	}
	return "", false
}
