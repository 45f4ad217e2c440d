package importer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Fields a mapping may set, in the order Mapping.String prints them.
var mappingFields = []string{"sessionKey", "sessionId", "seq", "id", "role", "speaker", "text", "timestamp"}

// Mapping says where each message field of a generic JSONL line comes from:
// a path into the line's JSON object or a constant. ParseMapping builds one
// from `--map`'s text; DefaultMapping is what an unmapped field uses.
type Mapping struct {
	exprs map[string]expr
	// explicit holds the fields the text named (a named seq is required
	// on every line; the default one falls back to the line's position).
	explicit map[string]bool
}

// expr is a path (steps) or, when isConst, the constant value.
type expr struct {
	src     string
	isConst bool
	value   string
	steps   []step
}

// step is one step of a path: a key (.name or ["name"]), an index ([N])
// or every element of an array ([]).
type step struct {
	key   string
	index int // -1: key step; -2: every element
}

const (
	keyStep  = -1
	iterStep = -2
)

// DefaultMapping maps each field to the top-level key of its own name
// (`text=.text,seq=.seq,...`): lines already in memindex's event shape
// need no --map.
func DefaultMapping() *Mapping {
	m := &Mapping{exprs: map[string]expr{}, explicit: map[string]bool{}}
	for _, f := range mappingFields {
		m.exprs[f] = expr{src: "." + f, steps: []step{{key: f, index: keyStep}}}
	}
	return m
}

// ParseMapping parses a comma-separated list of field=expr over
// DefaultMapping. A field is one of sessionKey, sessionId, seq, id, role,
// speaker, text, timestamp; an expr is a path (`.a.b`, `.a[0]`, `.a[]`
// for every element of an array, `.["odd key"]`), a constant (a JSON
// string: `"chat-1"`), or nothing (`id=`: the field is not mapped). The
// error names the item and what is wrong with it, and wraps ErrMapping.
func ParseMapping(s string) (*Mapping, error) {
	m := DefaultMapping()
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	items, err := splitItems(s)
	if err != nil {
		return nil, fmt.Errorf("--map: %w: %w", err, ErrMapping)
	}
	seen := map[string]bool{}
	for _, item := range items {
		name, src, ok := strings.Cut(item, "=")
		name, src = strings.TrimSpace(name), strings.TrimSpace(src)
		if !ok || name == "" {
			return nil, fmt.Errorf("--map: %q is not field=expr: %w", item, ErrMapping)
		}
		field, known := canonicalField(name)
		if !known {
			return nil, fmt.Errorf("--map: unknown field %q (fields: %s): %w", name, strings.Join(mappingFields, ", "), ErrMapping)
		}
		if seen[field] {
			return nil, fmt.Errorf("--map: field %s is mapped twice: %w", field, ErrMapping)
		}
		seen[field] = true
		if src == "" {
			delete(m.exprs, field)
			continue
		}
		e, err := parseExpr(src)
		if err != nil {
			return nil, fmt.Errorf("--map: %s=%s: %w: %w", field, src, err, ErrMapping)
		}
		m.exprs[field] = e
		m.explicit[field] = true
	}
	return m, nil
}

// String returns the mapping in ParseMapping's syntax: the fields --map
// named (an unmapped one as "field="), so that ParseMapping of it is the
// same mapping; "" for DefaultMapping.
func (m *Mapping) String() string {
	var parts []string
	for _, f := range mappingFields {
		e, ok := m.exprs[f]
		switch {
		case !ok:
			parts = append(parts, f+"=")
		case m.explicit[f]:
			parts = append(parts, f+"="+e.src)
		}
	}
	return strings.Join(parts, ",")
}

// canonicalField returns the field name is (matched without regard to
// case: sessionkey is sessionKey).
func canonicalField(name string) (string, bool) {
	for _, f := range mappingFields {
		if strings.EqualFold(f, name) {
			return f, true
		}
	}
	return "", false
}

// splitItems splits s at the commas that are outside quotes and brackets.
func splitItems(s string) ([]string, error) {
	var items []string
	start, depth, inStr := 0, 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '[':
			depth++
		case c == ']':
			depth--
		case c == ',' && depth == 0:
			items = append(items, s[start:i])
			start = i + 1
		}
	}
	if inStr {
		return nil, fmt.Errorf("unterminated string in %q", s)
	}
	items = append(items, s[start:])
	var out []string
	for _, it := range items {
		if strings.TrimSpace(it) != "" {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no field=expr in %q", s)
	}
	return out, nil
}

// parseExpr parses a constant ("...") or a path (.a.b[0]).
func parseExpr(src string) (expr, error) {
	e := expr{src: src}
	if src[0] == '"' {
		if err := json.Unmarshal([]byte(src), &e.value); err != nil {
			return e, fmt.Errorf("constant %s is not a JSON string", src)
		}
		e.isConst = true
		return e, nil
	}
	if src[0] != '.' {
		return e, fmt.Errorf("an expr is a path starting with '.' (.content, .meta.user[0]) or a \"constant\"")
	}
	i := 0
	for i < len(src) {
		switch src[i] {
		case '.':
			i++
			if i < len(src) && src[i] == '[' {
				continue // .["key"] or .[0]
			}
			j := i
			for j < len(src) && src[j] != '.' && src[j] != '[' {
				j++
			}
			if j == i {
				return e, fmt.Errorf("empty key at offset %d", i)
			}
			e.steps = append(e.steps, step{key: src[i:j], index: keyStep})
			i = j
		case '[':
			end := closingBracket(src, i)
			if end < 0 {
				return e, fmt.Errorf("unclosed '[' at offset %d", i)
			}
			inner := strings.TrimSpace(src[i+1 : end])
			switch {
			case inner == "":
				e.steps = append(e.steps, step{index: iterStep})
			case inner[0] == '"':
				var k string
				if err := json.Unmarshal([]byte(inner), &k); err != nil {
					return e, fmt.Errorf("key %s at offset %d is not a JSON string", inner, i)
				}
				e.steps = append(e.steps, step{key: k, index: keyStep})
			default:
				n, err := strconv.Atoi(inner)
				if err != nil || n < 0 {
					return e, fmt.Errorf("index %q at offset %d is not a non-negative integer", inner, i)
				}
				e.steps = append(e.steps, step{index: n})
			}
			i = end + 1
		default:
			return e, fmt.Errorf("unexpected %q at offset %d (a step is .key, [N], [] or [\"key\"])", src[i], i)
		}
	}
	return e, nil
}

// closingBracket returns the index of the ']' closing the '[' at i, or -1.
func closingBracket(s string, i int) int {
	inStr := false
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case inStr && c == '\\':
			j++
		case c == '"':
			inStr = !inStr
		case !inStr && c == ']':
			return j
		}
	}
	return -1
}

// eval returns the values the path finds in v (decoded JSON); none when a
// step finds nothing (a missing key, an index past the end, a null).
func (e expr) eval(v any) []any {
	if e.isConst {
		return []any{e.value}
	}
	cur := []any{v}
	for _, s := range e.steps {
		var next []any
		for _, c := range cur {
			switch s.index {
			case keyStep:
				if obj, ok := c.(map[string]any); ok {
					if x, ok := obj[s.key]; ok && x != nil {
						next = append(next, x)
					}
				}
			case iterStep:
				if arr, ok := c.([]any); ok {
					for _, x := range arr {
						if x != nil {
							next = append(next, x)
						}
					}
				}
			default:
				if arr, ok := c.([]any); ok && s.index < len(arr) && arr[s.index] != nil {
					next = append(next, arr[s.index])
				}
			}
		}
		cur = next
	}
	return cur
}
