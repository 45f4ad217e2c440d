package memindex

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestDecodeEvent(t *testing.T) {
	long := strings.Repeat("x", MaxTextBytes+1)
	tests := []struct {
		name    string
		in      string
		wantErr error
		field   string // the field a *FieldError must name
	}{
		{"message", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi"}`, nil, ""},
		{"messageId alias", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"messageId":"D1:1","text":"hi"}`, nil, ""},
		{"image caption only", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"imageCaption":"a cat"}`, nil, ""},
		{"unknown fields ignored", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","convSeq":9}`, nil, ""},
		{"session deleted, all ids", `{"type":"session.deleted","sessionKey":"k"}`, nil, ""},
		{"not JSON", `{"type":`, ErrInvalid, ""},
		{"trailing data", `{"type":"session.deleted","sessionKey":"k"} {}`, ErrInvalid, ""},
		{"invalid UTF-8", "{\"type\":\"message\",\"text\":\"\xff\"}", ErrInvalid, ""},
		{"no type", `{"sessionKey":"k"}`, ErrInvalid, "type"},
		{"unknown type", `{"type":"nope"}`, ErrInvalid, "type"},
		{"bad namespace", `{"type":"session.deleted","namespace":"a b","sessionKey":"k"}`, ErrInvalid, "namespace"},
		{"no session key", `{"type":"message","sessionId":"s","seq":1,"text":"hi"}`, ErrInvalid, "sessionKey"},
		{"no session id", `{"type":"message","sessionKey":"k","seq":1,"text":"hi"}`, ErrInvalid, "sessionId"},
		{"no seq", `{"type":"message","sessionKey":"k","sessionId":"s","text":"hi"}`, ErrInvalid, "seq"},
		{"negative seq", `{"type":"message","sessionKey":"k","sessionId":"s","seq":-3,"text":"hi"}`, ErrInvalid, "seq"},
		{"bad role", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"role":"boss","text":"hi"}`, ErrInvalid, "role"},
		{"blank text", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"  "}`, ErrInvalid, "text"},
		{"text too long", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"` + long + `"}`, ErrTooLarge, "text"},
		{"bad timestamp", `{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"text":"hi","timestamp":"yesterday"}`, ErrInvalid, "timestamp"},
		{"control char in key", `{"type":"message","sessionKey":"k\u0001","sessionId":"s","seq":1,"text":"hi"}`, ErrInvalid, "sessionKey"},
		{"file without path", `{"type":"file.upserted"}`, ErrInvalid, "path"},
		{"record", `{"type":"record.upserted","id":"r1","text":"Ana prefers tea","tags":["prefs"]}`, nil, ""},
		{"record without text", `{"type":"record.upserted","id":"r1"}`, ErrInvalid, "text"},
		{"record delete needs only the id", `{"type":"record.deleted","id":"r1"}`, nil, ""},
		{"messages", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"a"},{"seq":3,"messageId":"D1:3","imageCaption":"a cat"}]}`, nil, ""},
		{"messages, none", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[]}`, ErrInvalid, "messages"},
		{"messages, too many", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[` + strings.Repeat(`{"seq":1,"text":"a"},`, MaxEventMessages) + `{"seq":1,"text":"a"}]}`, ErrTooLarge, "messages"},
		{"messages without sessionId", `{"type":"messages","sessionKey":"k","messages":[{"seq":1,"text":"a"}]}`, ErrInvalid, "sessionId"},
		{"messages, the second blank", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"a"},{"seq":2,"text":" "}]}`, ErrInvalid, "messages[1].text"},
		{"messages, a bad role", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"a","role":"boss"}]}`, ErrInvalid, "messages[0].role"},
		{"messages, a text too long", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":1,"text":"a"},{"seq":2,"text":"` + long + `"}]}`, ErrTooLarge, "messages[1].text"},
		{"messages, seq 0", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":0,"text":"a"}]}`, ErrInvalid, "messages[0].seq"},
		{"messages, seqs falling", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":2,"text":"a"},{"seq":1,"text":"b"}]}`, ErrInvalid, "messages[1].seq"},
		{"messages, a seq twice", `{"type":"messages","sessionKey":"k","sessionId":"s","messages":[{"seq":2,"text":"a"},{"seq":2,"text":"b"}]}`, ErrInvalid, "messages[1].seq"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeEvent([]byte(tt.in))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("DecodeEvent()=%v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("DecodeEvent()=%v, want %v", err, tt.wantErr)
			}
			var fe *FieldError
			if tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field) {
				t.Fatalf("DecodeEvent()=%v, want a FieldError naming %q", err, tt.field)
			}
		})
	}
	if _, err := DecodeEvent(make([]byte, MaxEventBytes+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("DecodeEvent(oversized)=%v, want ErrTooLarge", err)
	}
}

// TestMessagesEventIsItsMessages: each message of a messages event is the
// message event of the same fields in its session, and a session cap
// applies to each.
func TestMessagesEventIsItsMessages(t *testing.T) {
	e, err := DecodeEvent([]byte(`{"type":"messages","namespace":"n","sessionKey":"k","sessionId":"s","messages":[` +
		`{"seq":4,"messageId":"D1:4","role":"user","speaker":"Ana","text":"hi","imageCaption":"a cat","timestamp":"2026-11-30T09:12:00Z"},{"seq":5,"id":"m5","text":"yo"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Type: TypeMessage, Namespace: "n", SessionKey: "k", SessionID: "s", Seq: 4, ID: "D1:4", Role: "user", Speaker: "Ana", Text: "hi", ImageCaption: "a cat", Timestamp: "2026-11-30T09:12:00Z"},
		{Type: TypeMessage, Namespace: "n", SessionKey: "k", SessionID: "s", Seq: 5, ID: "m5", Text: "yo"},
	}
	for i, m := range e.Messages {
		got := e.Message(m)
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("message %d = %+v, want %+v", i, got, want[i])
		}
		if err := got.Validate(); err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
	l := Limits{MaxSessionMessages: 4}
	var fe *FieldError
	if err := l.ValidateEvent(&e); !errors.Is(err, ErrTooLarge) || !errors.As(err, &fe) || fe.Field != "messages[1].seq" {
		t.Fatalf("a session cap of 4: %v, want ErrTooLarge naming messages[1].seq", err)
	}
}

func TestSearchRequestNormalize(t *testing.T) {
	tests := []struct {
		name  string
		req   SearchRequest
		field string
	}{
		{"defaults", SearchRequest{Namespace: "n", Query: "q"}, ""},
		{"bad namespace", SearchRequest{Namespace: "n.x", Query: "q"}, "namespace"},
		{"blank query", SearchRequest{Namespace: "n", Query: " "}, "query"},
		{"k too big", SearchRequest{Namespace: "n", Query: "q", K: MaxK + 1}, "k"},
		{"min score", SearchRequest{Namespace: "n", Query: "q", MinScore: 2}, "minScore"},
		{"mode", SearchRequest{Namespace: "n", Query: "q", Mode: "fuzzy"}, "mode"},
		{"fusion", SearchRequest{Namespace: "n", Query: "q", Fusion: "max"}, "fusion"},
		{"source", SearchRequest{Namespace: "n", Query: "q", Sources: []string{"mail"}}, "sources"},
		{"after", SearchRequest{Namespace: "n", Query: "q", After: "monday"}, "after"},
		{"query too long", SearchRequest{Namespace: "n", Query: strings.Repeat("q", MaxQueryBytes+1)}, "query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Normalize()
			if tt.field == "" {
				if err != nil || tt.req.K != DefaultK || tt.req.Mode != ModeHybrid || tt.req.Fusion != FusionRRF {
					t.Fatalf("Normalize()=%v with %+v, want defaults", err, tt.req)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Normalize()=%v, want a FieldError naming %q", err, tt.field)
			}
		})
	}
}

func TestPartition(t *testing.T) {
	// TestPartitionMatchesServerTransform in package consumer proves the
	// values equal nats-server's partition(P,1); this checks range and spread.
	seen := map[int]bool{}
	for i := range 1000 {
		p := Partition("ns"+string(rune('a'+i%26))+strings.Repeat("x", i%7), 16)
		if p < 0 || p >= 16 {
			t.Fatalf("Partition()=%d, want 0..15", p)
		}
		seen[p] = true
	}
	if len(seen) < 12 {
		t.Fatalf("Partition spread over %d of 16 partitions, want most", len(seen))
	}
	if got := Partition("x", 0); got != 0 {
		t.Fatalf("Partition(x, 0)=%d, want 0", got)
	}
}

// TestDeepEventsSkipTheFastDecoder checks that a payload nested deeper than
// any event is decoded by encoding/json, which refuses it at its depth
// limit, not by the fast decoder, which would recurse through it (a
// megabyte of "[" took it 512 MB of stack).
func TestDeepEventsSkipTheFastDecoder(t *testing.T) {
	deep := []byte(`{"type":"message","x":` + strings.Repeat("[", MaxEventBytes-64))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var err error
	done := make(chan struct{})
	go func() { // a fresh stack, read while it is still this size
		defer close(done)
		_, err = DecodeEvent(deep)
		runtime.ReadMemStats(&after)
	}()
	<-done
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Fatalf("DecodeEvent(a megabyte of [) = %v, want encoding/json's depth error wrapping ErrInvalid", err)
	}
	if grew := int64(after.StackInuse) - int64(before.StackInuse); grew > 64<<20 {
		t.Fatalf("decoding a megabyte of [ took %d MiB more stack, want the fast decoder kept out of it", grew>>20)
	}
	// Nested as deep as the fast decoder takes, and one level deeper:
	// both decode (unknown fields are ignored).
	for _, levels := range []int{31, 40} {
		line := `{"type":"session.deleted","sessionKey":"k","x":` + strings.Repeat(`[`, levels) + strings.Repeat(`]`, levels) + `}`
		if e, err := DecodeEvent([]byte(line)); err != nil || e.SessionKey != "k" {
			t.Fatalf("DecodeEvent(%d levels) = %+v, %v", levels, e, err)
		}
	}
}

func TestNestedOver(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		in   string
		over bool
	}{
		{deep(32), false},
		{deep(33), true},
		{`{"a":"` + strings.Repeat("[", 40) + `"}`, false},             // inside a string
		{`{"a":"\"` + strings.Repeat("{", 40) + `"}`, false},           // after an escaped quote, still inside
		{`{"a":"\\"` + strings.Repeat("[", 40), true},                  // an escaped backslash ends the string
		{strings.Repeat("]", 40) + strings.Repeat("[", 33), true},      // stray closers do not hide openers
		{`{"a":[` + deep(30) + `],"b":{"c":` + deep(30) + `}}`, false}, // siblings do not add up
		{`{"a":"` + strings.Repeat("[", 31) + `","b":[]}`, false},      // few openers in all: not read further
	} {
		if got := nestedOver([]byte(c.in), maxFastNesting); got != c.over {
			t.Errorf("nestedOver(%.60q) = %v, want %v", c.in, got, c.over)
		}
	}
}

// BenchmarkNestedOver reads a messages event of ten messages, as every
// event DecodeEvent decodes is read first.
func BenchmarkNestedOver(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"type":"messages","namespace":"ns-7","sessionKey":"agent:main:s-42","sessionId":"s1","messages":[`)
	for i := range 10 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"seq":%d,"role":"user","text":"I went to the market on Tuesday and bought apples, pears and a [small] bag of rice for the week.","ts":"2026-12-07T10:00:00Z"}`, i)
	}
	sb.WriteString(`]}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if nestedOver(data, maxFastNesting) {
			b.Fatal("over")
		}
	}
}
