package memindex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	fastjson "github.com/segmentio/encoding/json"
)

// Event types. An event's "type" field names one of these.
const (
	TypeMessage = "message"
	// TypeMessages appends several messages of one session in one event
	// (Event.Messages): what a publisher with many messages at hand (an
	// import, a turn of user, tool and assistant messages) sends to pay
	// the stream's cost once for all of them.
	TypeMessages       = "messages"
	TypeSessionDeleted = "session.deleted"
	TypeFileUpserted   = "file.upserted"
	TypeFileDeleted    = "file.deleted"
	TypeRecordUpserted = "record.upserted"
	TypeRecordDeleted  = "record.deleted"
)

// Size limits of events: the defaults of Limits and the highest values it
// may set (limits.go).
const (
	// MaxEventBytes is the largest event payload accepted.
	MaxEventBytes = 1 << 20
	// MaxTextBytes is the largest message text accepted by default.
	MaxTextBytes = 64 << 10
	// MaxKeyBytes bounds sessionKey, sessionId, id, speaker and other identifiers.
	MaxKeyBytes = 256
	// MaxEventMessages is the most messages one messages event may append.
	MaxEventMessages = 1000
)

// Roles a message may have.
var roles = map[string]bool{"": true, "user": true, "assistant": true, "system": true, "tool": true}

// Event is one session-change event as published on EventSubject. Unknown
// JSON fields are ignored. Which fields are required depends on Type.
type Event struct {
	Type      string `json:"type"`
	Namespace string `json:"namespace,omitempty"`

	// Session fields (message, messages, session.deleted).
	SessionKey string `json:"sessionKey,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	Seq        int64  `json:"seq,omitempty"`
	ID         string `json:"id,omitempty"`
	// MessageID is accepted as an alias of ID (the LoCoMo files use it).
	MessageID    string `json:"messageId,omitempty"`
	Role         string `json:"role,omitempty"`
	Speaker      string `json:"speaker,omitempty"`
	Text         string `json:"text,omitempty"`
	ImageCaption string `json:"imageCaption,omitempty"`
	// Timestamp is RFC 3339; empty means the time the stream stored the event.
	Timestamp string `json:"timestamp,omitempty"`

	// Memory file fields (file.upserted, file.deleted).
	Path        string `json:"path,omitempty"`
	DirPath     string `json:"dirPath,omitempty"`
	Content     string `json:"content,omitempty"`
	ContentHash string `json:"contentHash,omitempty"`

	// Record fields (record.upserted, record.deleted); ID names the record.
	Tags []string `json:"tags,omitempty"`

	// Messages are what a messages event appends to its session
	// (SessionKey, SessionID), in seq order, 1 to MaxEventMessages of
	// them; a message event's own message fields are not used.
	Messages []Message `json:"messages,omitempty"`
}

// Message is one message of a messages event: the message fields of a
// message event, whose session is the event's.
type Message struct {
	Seq          int64  `json:"seq"`
	ID           string `json:"id,omitempty"`
	MessageID    string `json:"messageId,omitempty"`
	Role         string `json:"role,omitempty"`
	Speaker      string `json:"speaker,omitempty"`
	Text         string `json:"text,omitempty"`
	ImageCaption string `json:"imageCaption,omitempty"`
	Timestamp    string `json:"timestamp,omitempty"`
}

// Message returns the message event that appends m to e's session: what
// a messages event does once for each of its messages.
func (e *Event) Message(m Message) Event {
	id := m.ID
	if id == "" {
		id = m.MessageID
	}
	return Event{Type: TypeMessage, Namespace: e.Namespace, SessionKey: e.SessionKey, SessionID: e.SessionID,
		Seq: m.Seq, ID: id, Role: m.Role, Speaker: m.Speaker, Text: m.Text, ImageCaption: m.ImageCaption, Timestamp: m.Timestamp}
}

// DecodeEvent parses and validates one event payload within
// DefaultLimits. The error says what is wrong and wraps ErrInvalid or
// ErrTooLarge; such an event can never apply.
func DecodeEvent(data []byte) (Event, error) { return DefaultLimits().DecodeEvent(data) }

// DecodeEvent parses and validates one event payload within l (zero fields:
// defaults). The error says what is wrong and wraps ErrInvalid or
// ErrTooLarge; such an event can never apply.
func (l Limits) DecodeEvent(data []byte) (Event, error) {
	var e Event
	l = l.WithDefaults()
	if err := l.checkPayload(data); err != nil {
		return e, err
	}
	// Every event a worker applies is decoded here. segmentio's decoder
	// (encoding/json's behaviour, also the MCP SDK's JSON) takes about a
	// fifth of encoding/json's time for an event; a payload it refuses is
	// decoded again by encoding/json, whose errors are the ones reported.
	// FuzzDecodeEvent checks that what it accepts, encoding/json accepts
	// as the same event. Some payloads skip it (fastDecodable).
	if !fastDecodable(data) || fastjson.Unmarshal(data, &e) != nil {
		var err error
		if e, err = decodeEventStd(data); err != nil {
			return e, err
		}
	}
	if e.ID == "" {
		e.ID = e.MessageID
	}
	return e, l.ValidateEvent(&e)
}

// checkPayload checks an event's size and encoding before it is decoded;
// l has its defaults.
func (l Limits) checkPayload(data []byte) error {
	if len(data) > l.MaxEventBytes {
		return fmt.Errorf("event is %d bytes, over the limit of %d: %w", len(data), l.MaxEventBytes, ErrTooLarge)
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("event is not valid UTF-8 (at byte %d): %w", invalidUTF8At(data), ErrInvalid)
	}
	return nil
}

// fastDecodable reports whether DecodeEvent may give data to segmentio's
// decoder. Not when it is nested deeper than any event: that decoder
// recurses without a bound (a megabyte of "[" took it 512 MB of stack),
// where encoding/json refuses past 10,000 levels. Nor when it holds U+017F
// (ſ) or U+212A (the Kelvin sign), raw or escaped: encoding/json matches
// names with Unicode case folding, under which those are "s" and "k"
// ("ſessionKey" sets SessionKey), and segmentio's decoder does not.
func fastDecodable(data []byte) bool {
	if nestedOver(data, maxFastNesting) {
		return false
	}
	for _, r := range foldedToASCII {
		if bytes.Contains(data, r) {
			return false
		}
	}
	return true
}

// foldedToASCII are ſ and the Kelvin sign, raw, and the start of their
// \u escapes (which also keeps a few neighbours from the fast decoder).
var foldedToASCII = [][]byte{[]byte("\u017f"), []byte("\u212a"), []byte(`\u017`), []byte(`\u212`)}

// maxFastNesting is the deepest payload DecodeEvent gives segmentio's
// decoder; an event is 3 levels deep (its object, tags, a tag), and
// unknown fields may add some.
const maxFastNesting = 32

var openBrace, openBracket = []byte("{"), []byte("[")

// nestedOver reports whether data opens more than limit objects and arrays
// at once, reading it as a JSON lexer does (brackets inside strings do not
// count). It only chooses a decoder: on malformed input it may say more,
// never less, than a decoder reaches before it stops at the first error.
func nestedOver(data []byte, limit int) bool {
	// No more openers in all of data than limit (strings included): it
	// cannot nest deeper. bytes.Count runs in SIMD; an event of ten
	// messages has a dozen or two, and the loop below cost 0.5 % of a
	// spread ingest's CPU (BENCHMARKS.md, twenty-first session).
	if bytes.Count(data, openBrace)+bytes.Count(data, openBracket) <= limit {
		return false
	}
	depth, inStr := 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			if depth++; depth > limit {
				return true
			}
		case '}', ']':
			depth = max(depth-1, 0) // more closers than openers: malformed, never less deep
		}
	}
	return false
}

// decodeEventStd decodes data with encoding/json: one JSON object and
// nothing after it.
func decodeEventStd(data []byte) (Event, error) {
	var e Event
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&e); err != nil {
		return e, fmt.Errorf("event is not a JSON object: %v: %w", err, ErrInvalid)
	}
	if dec.More() {
		return e, fmt.Errorf("event has data after the JSON object: %w", ErrInvalid)
	}
	return e, nil
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// Validate checks every field the event's type needs within DefaultLimits
// and returns a *FieldError naming the first field that is wrong.
func (e *Event) Validate() error { return DefaultLimits().ValidateEvent(e) }

// ValidateEvent checks every field the event's type needs within l (zero
// fields: defaults) and returns a *FieldError naming the first field that is
// wrong.
func (l Limits) ValidateEvent(e *Event) error {
	l = l.WithDefaults()
	if e.Type == "" {
		return fieldErr("type", "is required (one of message, messages, session.deleted, file.upserted, file.deleted, record.upserted, record.deleted)")
	}
	if e.Namespace != "" {
		if err := CheckNamespace(e.Namespace); err != nil {
			return err
		}
	}
	switch e.Type {
	case TypeMessage:
		if err := checkSession(e); err != nil {
			return err
		}
		return l.messageFields(e)
	case TypeMessages:
		return l.validateMessages(e)
	case TypeSessionDeleted:
		if err := checkKey("sessionKey", e.SessionKey, true); err != nil {
			return err
		}
		if err := checkKey("sessionId", e.SessionID, false); err != nil {
			return err
		}
	case TypeFileUpserted, TypeFileDeleted:
		if err := checkKey("path", e.Path, true); err != nil {
			return err
		}
	case TypeRecordUpserted, TypeRecordDeleted:
		if err := checkKey("id", e.ID, true); err != nil {
			return err
		}
		for _, f := range []struct{ name, v string }{{"sessionKey", e.SessionKey}, {"sessionId", e.SessionID}} {
			if err := checkKey(f.name, f.v, false); err != nil {
				return err
			}
		}
		if e.Type == TypeRecordUpserted {
			if strings.TrimSpace(e.Text) == "" {
				return fieldErr("text", "is required and must not be blank")
			}
			if len(e.Text) > l.MaxTextBytes {
				return tooLarge("text", len(e.Text), l.MaxTextBytes)
			}
		}
	default:
		return fieldErr("type", "%q is not a known event type", truncate(e.Type, 40))
	}
	return nil
}

// Time returns the event's timestamp, or the zero time when it has none.
func (e *Event) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.Timestamp)
	return t
}

func checkKey(field, v string, required bool) error {
	switch {
	case v == "" && required:
		return fieldErr(field, "is required")
	case len(v) > MaxKeyBytes:
		return tooLarge(field, len(v), MaxKeyBytes)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return fieldErr(field, "contains a control character")
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// validateMessages checks the fields of messages event e.
func (l Limits) validateMessages(e *Event) error {
	if err := checkSession(e); err != nil {
		return err
	}
	switch n := len(e.Messages); {
	case n == 0:
		return fieldErr("messages", "is required: 1 to %d messages of the session", MaxEventMessages)
	case n > MaxEventMessages:
		return &FieldError{Field: "messages", Err: ErrTooLarge, Reason: fmt.Sprintf("holds %d messages, over the limit of %d an event may hold", n, MaxEventMessages)}
	}
	for i, m := range e.Messages {
		if i > 0 && m.Seq <= e.Messages[i-1].Seq {
			return fieldErr(fmt.Sprintf("messages[%d].seq", i), "is %d after %d: a messages event holds its messages in seq order, each seq once", m.Seq, e.Messages[i-1].Seq)
		}
		me := e.Message(m)
		if err := l.messageFields(&me); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				fe.Field = fmt.Sprintf("messages[%d].%s", i, fe.Field)
			}
			return err
		}
	}
	return nil
}

// checkSession checks the session fields a message or messages event
// requires.
func checkSession(e *Event) error {
	if err := checkKey("sessionKey", e.SessionKey, true); err != nil {
		return err
	}
	return checkKey("sessionId", e.SessionID, true)
}

// messageFields checks a message's own fields: all of a message event's
// but its session's.
func (l Limits) messageFields(e *Event) error {
	if e.Seq < 1 {
		return fieldErr("seq", "is required and must be a positive integer, got %d", e.Seq)
	}
	if l.MaxSessionMessages > 0 && e.Seq > l.MaxSessionMessages {
		return &FieldError{Field: "seq", Err: ErrTooLarge, Reason: fmt.Sprintf(
			"is %d: the session would have %d messages, over the limit of %d a session may hold", e.Seq, e.Seq, l.MaxSessionMessages)}
	}
	if err := checkKey("id", e.ID, false); err != nil {
		return err
	}
	if !roles[e.Role] {
		return fieldErr("role", "%q is not one of user, assistant, system, tool", truncate(e.Role, 40))
	}
	if err := checkKey("speaker", e.Speaker, false); err != nil {
		return err
	}
	if strings.TrimSpace(e.Text) == "" && strings.TrimSpace(e.ImageCaption) == "" {
		return fieldErr("text", "is required and must not be blank")
	}
	if len(e.Text) > l.MaxTextBytes {
		return tooLarge("text", len(e.Text), l.MaxTextBytes)
	}
	if len(e.ImageCaption) > l.MaxTextBytes {
		return tooLarge("imageCaption", len(e.ImageCaption), l.MaxTextBytes)
	}
	if e.Timestamp != "" {
		if _, err := time.Parse(time.RFC3339Nano, e.Timestamp); err != nil {
			return fieldErr("timestamp", "%q is not an RFC 3339 time like 2026-11-30T09:12:00Z", truncate(e.Timestamp, 60))
		}
	}
	return nil
}
