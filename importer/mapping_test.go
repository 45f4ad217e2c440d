package importer_test

import (
	"errors"
	"strings"
	"testing"

	"memindex/importer"
)

// exportMap maps the sample chat export (testdata/chat-export.jsonl).
const exportMap = `sessionKey="chat-export",sessionId=.conversation.id,id=.message_id,role=.author.role,speaker=.author.name,text=.content.parts,timestamp=.create_time`

func TestParseMapping(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"text=.content", "text=.content"},
		{`text=.a.b[0], speaker = .role , sessionkey="x,y", id=`, `sessionKey="x,y",id=,speaker=.role,text=.a.b[0]`},
		{`text=.["odd key"].parts[].text,seq=`, `seq=,text=.["odd key"].parts[].text`},
		{`text=.["a,b]"],seq=.seq`, `seq=.seq,text=.["a,b]"]`},
	} {
		m, err := importer.ParseMapping(tc.in)
		if err != nil {
			t.Errorf("ParseMapping(%q) error %v", tc.in, err)
			continue
		}
		if got := m.String(); got != tc.want {
			t.Errorf("ParseMapping(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestParseMappingErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{",", "no field=expr"},
		{"text", `"text" is not field=expr`},
		{"=.a", `"=.a" is not field=expr`},
		{"body=.a", `unknown field "body"`},
		{"text=.a,text=.b", "text is mapped twice"},
		{"text=content", "a path starting with '.'"},
		{"text=.a..b", "empty key at offset 3"},
		{"text=.a[", "unclosed '['"},
		{"text=.a[x]", `index "x" at offset 2`},
		{"text=.a[-1]", `index "-1"`},
		{`text=.a["b]`, `unterminated string`},
		{`sessionKey="unterminated`, "unterminated string"},
		{`sessionKey="a"b`, "is not a JSON string"},
		{"text=.a b", ""}, // a key may hold a space: .a b is the key "a b"
	} {
		_, err := importer.ParseMapping(tc.in)
		if tc.want == "" {
			if err != nil {
				t.Errorf("ParseMapping(%q) error %v, want none", tc.in, err)
			}
			continue
		}
		if !errors.Is(err, importer.ErrMapping) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseMapping(%q) error %v, want ErrMapping with %q", tc.in, err, tc.want)
		}
	}
}

// TestMappingEvent maps lines field by field: paths, constants, text
// parts joined, numbers as strings, roles normalized, times converted.
func TestMappingEvent(t *testing.T) {
	m, err := importer.ParseMapping(exportMap)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := m.Event([]byte(`{"conversation":{"id":"c1"},"message_id":42,"author":{"role":"Human","name":"Ben"},"content":{"parts":["one",{"type":"text","text":"two"},{"type":"image","text":"no"},""]},"create_time":1795857120.5}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.SessionKey != "chat-export" || ev.SessionID != "c1" || ev.ID != "42" || ev.Role != "user" || ev.Speaker != "Ben" ||
		ev.Text != "one\ntwo" || ev.Timestamp != "2026-11-28T09:12:00.5Z" || ev.Seq != 0 {
		t.Fatalf("Event = %+v", ev)
	}
	for _, tc := range []struct{ ts, want string }{
		{`1795857120117`, "2026-11-28T09:12:00.117Z"},
		{`1795857120117000`, "2026-11-28T09:12:00.117Z"},
		{`1795857120117000000`, "2026-11-28T09:12:00.117Z"},
		{`"2026-11-28T10:12:00+01:00"`, "2026-11-28T09:12:00Z"},
	} {
		ev, err := m.Event([]byte(`{"conversation":{"id":"c1"},"content":{"parts":["x"]},"create_time":` + tc.ts + `}`))
		if err != nil || ev.Timestamp != tc.want {
			t.Errorf("timestamp %s = %q (%v), want %s", tc.ts, ev.Timestamp, err, tc.want)
		}
	}
}

// TestMappingEventErrors: each missing or wrong field is named with the
// path the mapping read it from.
func TestMappingEventErrors(t *testing.T) {
	m, err := importer.ParseMapping(`sessionKey="k",sessionId=.c,text=.t,seq=.n`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, want string }{
		{`{"c":"1","n":1}`, "text: .t is missing"},
		{`{"c":"1","t":"x"}`, "seq: .n is missing"},
		{`{"t":"x","n":1}`, "sessionId: .c is missing"},
		{`{"c":"1","t":"  ","n":1}`, "text: .t holds no text"},
		{`{"c":"1","t":"x","n":"two"}`, `seq: .n is "two", not an integer`},
		{`{"c":"1","t":"x","n":0}`, "seq: .n is 0, not a positive integer"},
		{`{"c":{"x":1},"t":"x","n":1}`, "sessionId: .c is an object, not a string or number"},
		{`{"c":"1","t":"x","n":1,"role":"wizard"}`, `role: .role is "wizard", not a role`},
		{`{"c":"1","t":"x","n":1,"timestamp":"yesterday"}`, `timestamp: .timestamp is "yesterday", not an RFC 3339 time`},
		{`{"c":"1","t":"x","n":1,"id":[1,2]}`, `id: .id is an array`},
		{`not json`, "not JSON"},
	} {
		if _, err := m.Event([]byte(tc.line)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Event(%s) error %v, want %q", tc.line, err, tc.want)
		}
	}
	unmapped, _ := importer.ParseMapping("sessionKey=")
	if _, err := unmapped.Event([]byte(`{"sessionId":"1","text":"x"}`)); err == nil || !strings.Contains(err.Error(), "sessionKey is required and not mapped") {
		t.Errorf("unmapped sessionKey: error %v", err)
	}
}

// TestJSONLSample imports the sample chat export: two conversations, seq
// by position in each, and bad lines reported by number while the rest
// are imported.
func TestJSONLSample(t *testing.T) {
	m, err := importer.ParseMapping(exportMap)
	if err != nil {
		t.Fatal(err)
	}
	msgs, sum := parseAll(t, importer.Config{Mapping: m}, "testdata/chat-export.jsonl")
	if len(msgs) != 5 || sum.Sessions != 2 || sum.BadLines != 0 {
		t.Fatalf("%d messages in %d sessions, problems %v; want 5 in 2", len(msgs), sum.Sessions, sum.Problems)
	}
	wantSeq := []int64{1, 2, 3, 1, 2}
	for i, msg := range msgs {
		if msg.Event.Seq != wantSeq[i] || msg.Line != i+1 {
			t.Errorf("message %d: seq %d line %d, want seq %d line %d", i, msg.Event.Seq, msg.Line, wantSeq[i], i+1)
		}
	}
	if msgs[1].Event.Text != "Cherry varieties like Sungold cope with four hours of sun.\nGrow them in pots of at least 20 litres." || msgs[1].Event.Role != "assistant" {
		t.Errorf("message 2 = %+v", msgs[1].Event)
	}

	in := `{"sessionKey":"k","sessionId":"s","seq":7,"text":"seven"}
{"sessionKey":"k","sessionId":"s","text":"positional"}
{"sessionKey":"k","sessionId":"s","seq":7,"text":"again"}
{"sessionKey":"k","text":"no id"}

{"sessionKey":"k","sessionId":"s","seq":5,"text":"five","role":"Bot"}
`
	msgs, sum = parseText(t, importer.Config{}, in)
	if len(msgs) != 3 || msgs[0].Event.Seq != 7 || msgs[1].Event.Seq != 2 || msgs[2].Event.Seq != 5 || msgs[2].Event.Role != "assistant" {
		t.Fatalf("messages %+v; want seq 7, 2 (its position), 5", msgs)
	}
	if sum.BadLines != 2 || sum.Problems[0].Line != 3 || !strings.Contains(sum.Problems[0].Reason, "seq 7 of session k/s was already given by line 1") ||
		sum.Problems[1].Line != 4 || !strings.Contains(sum.Problems[1].Reason, "sessionId: .sessionId is missing") || sum.Skipped["blank"] != 1 {
		t.Fatalf("problems %v skipped %v; want lines 3 (seq again) and 4 (no sessionId), one blank", sum.Problems, sum.Skipped)
	}
}
