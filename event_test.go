package memindex

import (
	"errors"
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
