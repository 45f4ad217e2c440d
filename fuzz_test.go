package memindex

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// maxErrorBytes bounds the text of any validation error: values are quoted
// truncated, so a huge input never makes a huge error (or a huge DLQ reason).
const maxErrorBytes = 1024

// rejectedAsTyped fails t unless err is a *FieldError or wraps ErrInvalid or
// ErrTooLarge, with a message of bounded size.
func rejectedAsTyped(t *testing.T, what string, err error) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%s=%v: error is no *FieldError and wraps neither ErrInvalid nor ErrTooLarge", what, err)
	}
	if fe != nil && fe.Field == "" {
		t.Fatalf("%s=%v: *FieldError names no field", what, err)
	}
	if n := len(err.Error()); n > maxErrorBytes {
		t.Fatalf("%s: error message is %d bytes, want at most %d", what, n, maxErrorBytes)
	}
}

// eventBytes is the total size of an event's strings: decoding never makes
// more text than the payload held.
func eventBytes(e Event) int {
	n := len(e.Type) + len(e.Namespace) + len(e.SessionKey) + len(e.SessionID) + len(e.ID) + len(e.MessageID) +
		len(e.Role) + len(e.Speaker) + len(e.Text) + len(e.ImageCaption) + len(e.Timestamp) + len(e.Path) +
		len(e.DirPath) + len(e.Content) + len(e.ContentHash)
	for _, t := range e.Tags {
		n += len(t)
	}
	for _, m := range e.Messages {
		n += len(m.ID) + len(m.MessageID) + len(m.Role) + len(m.Speaker) + len(m.Text) + len(m.ImageCaption) + len(m.Timestamp)
	}
	return n
}

// fuzzLimits derives limits from fuzzer input, always valid, sometimes tight.
func fuzzLimits(text, session uint16) Limits {
	l := Limits{}
	if text%4 != 0 { // a quarter of runs keep the defaults
		l.MaxTextBytes = 1 + int(text)
	}
	l.MaxSessionMessages = int64(session % 64) // 0: no cap
	return l
}

func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi"}`,
		`{"type":"message","namespace":"agent-7","sessionKey":"whatsapp:+4912345","sessionId":"2026-11-30","seq":12,"id":"m-812","role":"user","speaker":"Ana","text":"I'm moving to Lisbon in May","timestamp":"2026-11-30T09:12:00Z"}`,
		`{"type":"message","sessionKey":"conv-26","sessionId":"session_1","seq":3,"messageId":"D1:3","speaker":"Caroline","text":"I went to a LGBTQ support group yesterday","imageCaption":"a photo of a rainbow flag","timestamp":"2023-05-08T13:56:00Z"}`,
		`{"type":"session.deleted","sessionKey":"k"}`,
		`{"type":"file.upserted","path":"notes/MEMORY.md","dirPath":"proj","content":"# Prefs\nAna drinks tea\n"}`,
		`{"type":"file.deleted","path":"notes/MEMORY.md"}`,
		`{"type":"record.upserted","id":"r1","text":"Ana prefers tea","tags":["prefs"]}`,
		`{"type":"record.deleted","id":"r1"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":100000,"text":"long session"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"\ud800 lone surrogate \u00e9"}`,
		`{"type":"nope"}`,
		`{"type":"message","seq":"1"}`,
		`{"type":"session.deleted","sessionKey":"k"} {}`,
		"\xff{",
		`[]`,
		`null`,
		// where a JSON decoder could part from encoding/json (DecodeEvent's
		// fast decoder must accept nothing else, and decode the same)
		`{"TYPE":"message","SessionKey":"k","sessionid":"s","SEQ":1,"Text":"case-insensitive names"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"first","text":"last wins"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1e2,"text":"exponent"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1.0,"text":"fraction"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":-0,"text":"minus zero"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":99999999999999999999,"text":"overflow"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":01,"text":"leading zero"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"\uD83D\uDE00 pair, \uDE00 lone low, \u0000 nul, \/ solidus"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"tab	raw"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":null,"tags":null}`,
		`{"type":"record.upserted","id":"r","text":"t","tags":["a",1]}`,
		`{"type":"record.upserted","id":"r","text":"t","tags":"a"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"x","extra":{"deep":[1,{"a":null}]}}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"x"}   ` + "\n",
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"x"}x`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"x",}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":true,"text":"x"}`,
		` {"type":"session.deleted","sessionKey":"k"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"lower","Text":"upper wins"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"t\u0065xt":"an escaped name","ſessionKey":"long s"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"x","tags":["a"],"tags":[]}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"x","\u017FessionId":"escaped long s","\u212Aey":"kelvin"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"x","sessionId":"s2","ſpeaker":"long s","ſeq":2}`,
		`{"type":"message","Key":"k","sessionKey":"k","sessionId":"s","seq":1,"text":"kelvin Kelvin"}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"x","seq":2}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1 ,"text" : "spaces" }`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"x"`,
		`{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"a"},{"seq":2,"messageId":"D1:2","role":"user","speaker":"Ana","imageCaption":"a cat","timestamp":"2026-11-30T09:12:00Z"}]}`,
		`{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":2,"text":"a"},{"seq":1,"text":"b"}]}`,
		`{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"SEQ":1,"Text":"case"},{"seq":3,"text":"x","seq":4}]}`,
		`{"type":"messages","sessionKey":"k","sessionId":"s","messages":[]}`,
		`{"type":"messages","sessionKey":"k","sessionId":"s","messages":null}`,
		`{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"a"}],"messages":[{"seq":5,"text":"last wins"}]}`,
		`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"x","messages":[]}`,
		`{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"a","ſeq":2}]}`,
	} {
		f.Add([]byte(s), uint16(0), uint16(0))
		f.Add([]byte(s), uint16(5), uint16(7))
	}
	f.Fuzz(func(t *testing.T, b []byte, text, session uint16) {
		l := fuzzLimits(text, session)
		e, err := l.DecodeEvent(b)
		// The same verdict, event and error as with encoding/json alone.
		want, wantErr := decodeEventWithStd(l, b)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) || !reflect.DeepEqual(e, want) {
			t.Fatalf("DecodeEvent(%q) = %+v, %v; encoding/json alone: %+v, %v", b, e, err, want, wantErr)
		}
		if err != nil {
			rejectedAsTyped(t, "DecodeEvent()", err)
			return
		}
		if n := eventBytes(e); n > len(b) {
			t.Fatalf("DecodeEvent() made %d bytes of strings from a %d-byte payload", n, len(b))
		}
		w := l.WithDefaults()
		if len(e.Text) > w.MaxTextBytes || len(e.ImageCaption) > w.MaxTextBytes {
			t.Fatalf("DecodeEvent() accepted text of %d bytes over the limit %d", len(e.Text), w.MaxTextBytes)
		}
		for _, m := range e.Messages {
			if e.Type == TypeMessages && (len(m.Text) > w.MaxTextBytes || len(m.ImageCaption) > w.MaxTextBytes || (l.MaxSessionMessages > 0 && m.Seq > l.MaxSessionMessages)) {
				t.Fatalf("DecodeEvent() accepted a message of a messages event over the limits: seq %d, text %d bytes", m.Seq, len(m.Text))
			}
		}
		if l.MaxSessionMessages > 0 && e.Type == TypeMessage && e.Seq > l.MaxSessionMessages {
			t.Fatalf("DecodeEvent() accepted seq %d over the session limit %d", e.Seq, l.MaxSessionMessages)
		}
		if err := l.ValidateEvent(&e); err != nil {
			t.Fatalf("decoded event does not validate: %v", err)
		}
		// What a publisher re-encodes decodes to the same event.
		again, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("json.Marshal(decoded)=%v", err)
		}
		if len(again) <= w.MaxEventBytes {
			e2, err := l.DecodeEvent(again)
			if len(e.Tags) == 0 && len(e2.Tags) == 0 { // "tags":[] re-encodes as no tags
				e2.Tags = e.Tags
			}
			if len(e.Messages) == 0 && len(e2.Messages) == 0 { // as "messages":[]
				e2.Messages = e.Messages
			}
			if err != nil || !reflect.DeepEqual(e, e2) {
				t.Fatalf("re-decoding %s: %+v, %v; want %+v", again, e2, err, e)
			}
		}
	})
}

func FuzzSearchRequest(f *testing.F) {
	for _, s := range []string{
		`{"namespace":"agent-7","query":"what did Ana say about the move?"}`,
		`{"namespace":"agent-7","query":"what did Ana say about the move?","k":10,"minScore":0,"sessionKey":"whatsapp:+4912345","sessionId":"2026-11-30","sources":["sessions","files","records"],"dirPath":"proj","after":"2026-01-01T00:00:00Z","before":"2026-12-01T00:00:00Z","mode":"hybrid","explain":true}`,
		`{"namespace":"n","query":"q","mode":"keyword","fusion":"weighted","mmr":true,"mmrLambda":0.5,"halfLifeHours":24}`,
		`{"namespace":"n","query":"q","k":-1}`,
		`{"namespace":"n","query":"q","k":100000}`,
		`{"namespace":"n","query":"人工智能 的 发展"}`,
		`{"namespace":"n","query":"\"unbalanced OR ( NEAR"}`,
		`{"namespace":"n.x","query":"q"}`,
		`{"namespace":"n","query":"q","after":"monday"}`,
		`{"namespace":"n","query":"q","updatedAfter":"2026-01-01T00:00:00+02:00"}`,
		`{"namespace":"n","query":"   "}`,
		`{"namespace":"n","query":"q","minScore":1e309}`,
		`{"query":5}`,
		`{}`,
	} {
		f.Add([]byte(s), uint8(0), uint16(0))
		f.Add([]byte(s), uint8(3), uint16(9))
	}
	f.Fuzz(func(t *testing.T, b []byte, k uint8, query uint16) {
		var l Limits
		if k%4 != 0 {
			l.MaxK = 1 + int(k)%MaxK
		}
		if query%4 != 0 {
			l.MaxQueryBytes = 1 + int(query)
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("fuzz limits %+v invalid: %v", l, err)
		}
		var r SearchRequest
		if json.Unmarshal(b, &r) != nil {
			return // not a search object: the service rejects it before Normalize
		}
		err := l.NormalizeSearch(&r)
		if err != nil {
			rejectedAsTyped(t, "NormalizeSearch()", err)
			return
		}
		w := l.WithDefaults()
		switch {
		case r.K < 1 || r.K > w.MaxK:
			t.Fatalf("NormalizeSearch() accepted k=%d, want 1..%d", r.K, w.MaxK)
		case len(r.Query) > w.MaxQueryBytes || strings.TrimSpace(r.Query) == "":
			t.Fatalf("NormalizeSearch() accepted a query of %d bytes (limit %d)", len(r.Query), w.MaxQueryBytes)
		case len(r.Query) > len(b):
			t.Fatalf("NormalizeSearch() made a %d-byte query from a %d-byte request", len(r.Query), len(b))
		case r.Mode == "" || r.Fusion == "":
			t.Fatalf("NormalizeSearch() left mode %q fusion %q unset", r.Mode, r.Fusion)
		case !ValidNamespace(r.Namespace):
			t.Fatalf("NormalizeSearch() accepted namespace %q", r.Namespace)
		}
		after, before := r.TimeRange()
		if (r.After != "" || r.UpdatedAfter != "") && after.IsZero() || r.Before != "" && before.IsZero() {
			t.Fatalf("TimeRange()=%v, %v of an accepted request with after %q updatedAfter %q before %q", after, before, r.After, r.UpdatedAfter, r.Before)
		}
		// Normalizing twice changes nothing.
		again := r
		if err := l.NormalizeSearch(&again); err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("second NormalizeSearch()=%v, %+v; want nil, %+v", err, again, r)
		}
	})
}

// decodeEventWithStd is DecodeEvent with encoding/json as its only decoder.
func decodeEventWithStd(l Limits, data []byte) (Event, error) {
	l = l.WithDefaults()
	if err := l.checkPayload(data); err != nil {
		return Event{}, err
	}
	e, err := decodeEventStd(data)
	if err != nil {
		return e, err
	}
	if e.ID == "" {
		e.ID = e.MessageID
	}
	return e, l.ValidateEvent(&e)
}
