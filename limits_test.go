package memindex

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		name   string
		l      Limits
		substr string // "" = valid
	}{
		{"zero takes defaults", Limits{}, ""},
		{"defaults", DefaultLimits(), ""},
		{"lowered", Limits{MaxEventBytes: 4096, MaxTextBytes: 1024, MaxQueryBytes: 100, MaxK: 5, MaxSessionMessages: 10}, ""},
		{"event over the stream's max", Limits{MaxEventBytes: MaxEventBytes + 1}, "maxEventBytes must be between 1 and 1048576"},
		{"negative event", Limits{MaxEventBytes: -1}, "maxEventBytes"},
		{"text over event", Limits{MaxEventBytes: 1000, MaxTextBytes: 2000}, "maxTextBytes must be between 1 and 1000"},
		{"query over request", Limits{MaxQueryBytes: MaxRequestSize + 1}, "maxQueryBytes"},
		{"k over engine pool", Limits{MaxK: MaxK + 1}, "maxK must be between 1 and 200"},
		{"negative session", Limits{MaxSessionMessages: -1}, "maxSessionMessages must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate()
			switch {
			case tt.substr == "" && err != nil:
				t.Fatalf("Validate()=%v, want nil", err)
			case tt.substr != "" && (err == nil || !strings.Contains(err.Error(), tt.substr)):
				t.Fatalf("Validate()=%v, want an error containing %q", err, tt.substr)
			}
		})
	}
}

func TestLimitsDecodeEvent(t *testing.T) {
	msg := func(seq int, text string) []byte {
		return fmt.Appendf(nil, `{"type":"message","sessionKey":"k","sessionId":"s","seq":%d,"text":%q}`, seq, text)
	}
	l := Limits{MaxEventBytes: 200, MaxTextBytes: 10, MaxSessionMessages: 3}
	tests := []struct {
		name    string
		in      []byte
		wantErr error
		field   string
		reason  string
	}{
		{"within", msg(3, "0123456789"), nil, "", ""},
		{"text over", msg(1, "0123456789a"), ErrTooLarge, "text", "is 11 bytes, over the limit of 10"},
		{"caption over", []byte(`{"type":"message","sessionKey":"k","sessionId":"s","seq":1,"imageCaption":"0123456789a"}`), ErrTooLarge, "imageCaption", "over the limit of 10"},
		{"record text over", []byte(`{"type":"record.upserted","id":"r","text":"0123456789a"}`), ErrTooLarge, "text", "over the limit of 10"},
		{"session over", msg(4, "hi"), ErrTooLarge, "seq", "the session would have 4 messages, over the limit of 3"},
		{"event over", msg(1, strings.Repeat(" ", 200)+"x"), ErrTooLarge, "", ""},
		{"deletion is not capped", []byte(`{"type":"session.deleted","sessionKey":"k"}`), nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.DecodeEvent(tt.in)
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
			if tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason)) {
				t.Fatalf("DecodeEvent()=%v, want a FieldError naming %q with %q", err, tt.field, tt.reason)
			}
		})
	}
	// The defaults are today's constants: no session cap.
	if _, err := DecodeEvent(msg(1_000_000, "hi")); err != nil {
		t.Fatalf("DecodeEvent(seq 1e6)=%v, want nil with the default limits", err)
	}
}

func TestLimitsNormalizeSearch(t *testing.T) {
	l := Limits{MaxQueryBytes: 8, MaxK: 5}
	tests := []struct {
		name    string
		req     SearchRequest
		wantK   int
		wantErr error
		field   string
	}{
		{"default k within a lower cap", SearchRequest{Namespace: "n", Query: "q"}, 5, nil, ""},
		{"k at cap", SearchRequest{Namespace: "n", Query: "q", K: 5}, 5, nil, ""},
		{"k over cap", SearchRequest{Namespace: "n", Query: "q", K: 6}, 0, ErrInvalid, "k"},
		{"query at cap", SearchRequest{Namespace: "n", Query: "12345678"}, 5, nil, ""},
		{"query over cap", SearchRequest{Namespace: "n", Query: "123456789"}, 0, ErrTooLarge, "query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := l.NormalizeSearch(&tt.req)
			if tt.wantErr == nil {
				if err != nil || tt.req.K != tt.wantK {
					t.Fatalf("NormalizeSearch()=%v, k=%d; want nil, k=%d", err, tt.req.K, tt.wantK)
				}
				return
			}
			var fe *FieldError
			if !errors.Is(err, tt.wantErr) || !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("NormalizeSearch()=%v, want %v naming %q", err, tt.wantErr, tt.field)
			}
		})
	}
}
