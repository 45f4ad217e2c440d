package query

import (
	"errors"
	"testing"
	"unicode/utf8"

	"memindex"
)

// FuzzDecodeSearch: the service's search decoder accepts a request it can
// run or rejects it with an error that maps to 400 or 413 (never 500), and
// what it accepts is within the limits.
func FuzzDecodeSearch(f *testing.F) {
	for _, s := range []string{
		`{"query":"what did Ana say about the move?"}`,
		`{"type":"search","namespace":"agent-7","query":"Ana","k":10,"sources":["sessions"],"after":"2026-01-01T00:00:00Z","explain":true}`,
		`{"namespace":"other","query":"x"}`,
		`{"type":"message","query":"x"}`,
		`{"query":"x","k":201}`,
		`   `,
		`{"query":`,
		"\xff",
	} {
		f.Add("memindex.search.agent-7", []byte(s), uint8(0))
		f.Add("memindex.search.a.b", []byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, subject string, data []byte, k uint8) {
		l := memindex.Limits{}
		if k%2 == 1 {
			l.MaxK, l.MaxQueryBytes = 1+int(k)%memindex.MaxK, 1+int(k)*64
		}
		req, err := decodeSearch(l, subject, data)
		if err != nil {
			var fe *memindex.FieldError
			if code := codeFor(err); code != memindex.CodeBadRequest && code != memindex.CodeTooLarge {
				t.Fatalf("decodeSearch()=%v: code %s, want 400 or 413", err, code)
			}
			if !errors.As(err, &fe) && !errors.Is(err, memindex.ErrInvalid) && !errors.Is(err, memindex.ErrTooLarge) {
				t.Fatalf("decodeSearch()=%v: untyped error", err)
			}
			return
		}
		w := l.WithDefaults()
		// Each input byte gives the query at most one rune: JSON decoding
		// replaces an invalid UTF-8 byte by U+FFFD (three bytes), so the
		// query may have more bytes than the request, never more runes.
		if len(data) > memindex.MaxRequestSize || req.K < 1 || req.K > w.MaxK || len(req.Query) > w.MaxQueryBytes || utf8.RuneCountInString(req.Query) > len(data) {
			t.Fatalf("decodeSearch() accepted %d bytes: k=%d query %d bytes (limits %+v)", len(data), req.K, len(req.Query), w)
		}
		if !memindex.ValidNamespace(req.Namespace) || req.Namespace != subjectNamespace(subject) {
			t.Fatalf("decodeSearch(%q) accepted namespace %q", subject, req.Namespace)
		}
	})
}
