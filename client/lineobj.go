package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// lineObject is a JSONL line's top-level object: its members in the order
// they appear, each value the raw bytes of the line. It is what LineMsg
// decoded into a map[string]json.RawMessage and marshalled again, without
// decoding and encoding every value: the same members (the last of a
// duplicated key), the same lookups and the same bytes out
// (TestLineObjectMarshalsAsAMap), in a fifth of the time.
type lineObject []lineMember

type lineMember struct {
	key string
	raw []byte
}

// parseLine splits line into its object's members. A line that is no JSON
// object (or the JSON null, which has no members to send) is an error,
// with encoding/json's reason when it is invalid JSON.
func parseLine(line []byte) (lineObject, error) {
	if !json.Valid(line) {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, err
		}
		return nil, errors.New("invalid JSON") // not reached: Valid and Unmarshal agree
	}
	i := skipSpace(line, 0)
	if line[i] != '{' {
		return nil, errors.New("the line is JSON but no object")
	}
	// An event has about a dozen members: one allocation, not five.
	obj := make(lineObject, 0, 16)
	i = skipSpace(line, i+1)
	if line[i] == '}' {
		return obj, nil
	}
	for {
		end := stringEnd(line, i)
		key, err := decodeKey(line[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(line, end)
		i = skipSpace(line, i+1) // the colon
		vend := valueEnd(line, i)
		obj.set(key, line[i:vend])
		i = skipSpace(line, vend)
		if line[i] == '}' {
			return obj, nil
		}
		i = skipSpace(line, i+1) // the comma
	}
}

// The scanners below walk JSON that json.Valid accepted.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd returns the index after the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	default: // a number, true, false or null
		for i < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[i])) {
			i++
		}
		return i
	}
}

// decodeKey decodes a member's key (a JSON string with its quotes).
func decodeKey(raw []byte) (string, error) {
	if verbatim(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var k string
	err := json.Unmarshal(raw, &k)
	return k, err
}

// verbatim reports whether the JSON string raw decodes to its bytes
// between the quotes: ASCII without escapes (encoding/json replaces
// invalid UTF-8, so other bytes take its path).
func verbatim(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// get returns the raw value of key, nil when o has none.
func (o lineObject) get(key string) []byte {
	for i := range o {
		if o[i].key == key {
			return o[i].raw
		}
	}
	return nil
}

// set replaces the value of key, or adds the member.
func (o *lineObject) set(key string, raw []byte) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].raw = raw
			return
		}
	}
	*o = append(*o, lineMember{key, raw})
}

// str is the string value of key: "" when it is missing or no string.
func (o lineObject) str(key string) string {
	raw := o.get(key)
	if len(raw) >= 2 && raw[0] == '"' && verbatim(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if raw != nil {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// marshal appends o as json.Marshal writes a map[string]json.RawMessage:
// keys sorted, each value compacted with <, >, &, U+2028 and U+2029
// escaped.
func (o lineObject) marshal(dst []byte) ([]byte, error) {
	slices.SortFunc(o, func(a, b lineMember) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range o {
		if i > 0 {
			dst = append(dst, ',')
		}
		if plainKey(m.key) {
			dst = append(append(append(dst, '"'), m.key...), '"')
		} else {
			k, err := json.Marshal(m.key)
			if err != nil {
				return nil, err
			}
			dst = append(dst, k...)
		}
		dst = append(dst, ':')
		switch {
		case m.raw[0] == '"' && !needsEscape(m.raw), plainValue(m.raw):
			// A string has no whitespace to drop.
			dst = append(dst, m.raw...)
		case !needsEscape(m.raw):
			var buf bytes.Buffer
			if err := json.Compact(&buf, m.raw); err != nil {
				return nil, err
			}
			dst = append(dst, buf.Bytes()...)
		default:
			v, err := json.Marshal(json.RawMessage(m.raw))
			if err != nil {
				return nil, err
			}
			dst = append(dst, v...)
		}
	}
	return append(dst, '}'), nil
}

// plainKey reports whether json.Marshal writes k as it is between quotes.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// plainValue reports whether compacting and escaping leave raw as it is:
// no whitespace to drop, nothing to escape.
func plainValue(raw []byte) bool {
	for _, c := range raw {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return false
		}
	}
	return true
}

// needsEscape reports whether raw holds a byte json.Marshal escapes in a
// RawMessage (and json.Compact does not).
func needsEscape(raw []byte) bool {
	for _, c := range raw {
		if c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return true
		}
	}
	return false
}
