package store

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// openTestDB opens an in-memory database with an FTS5 table tokenized like
// chunks_fts, holding a few rows.
func openTestDB(tb testing.TB) *sql.DB {
	tb.Helper()
	registerDriver()
	db, err := sql.Open(driverName, ":memory:")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one in-memory database
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE VIRTUAL TABLE f USING fts5(text, ns, tokenize = 'porter unicode61 remove_diacritics 2');
		INSERT INTO f(text, ns) VALUES ('Ana moved to Lisbon', 'n610'), ('naïve café 東京 emoji 🎉', 'n610'), ('and or not near', 'n610')`); err != nil {
		tb.Fatal(err)
	}
	return db
}

func TestBuildMatch(t *testing.T) {
	long := strings.Repeat("x", maxTermBytes+1)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"only punctuation", `"*()^:-+{}[]`, ""},
		{"words", "Hello World", `"hello" OR "world"`},
		{"duplicates", "apple APPLE Apple pie", `"apple" OR "pie"`},
		{"stop words dropped", "what did Ana say about the move", `"ana" OR "say" OR "said" OR "move"`},
		{"only stop words kept", "what is the", `"what" OR "is" OR "the"`},
		{"operators are words", "a AND b OR NOT c NEAR(d e)", `"b" OR "c" OR "near" OR "d" OR "e"`},
		{"column filter and prefix", "text:foo* ^bar -baz", `"text" OR "foo" OR "bar" OR "baz"`},
		{"quotes", `"hello" it's`, `"hello"`},
		{"cjk and diacritics", "東京 naïve Café", `"東京" OR "naïve" OR "café"`},
		{"emoji separates", "fun🎉party", `"fun" OR "party"`},
		{"digits", "room 101 in 2026", `"room" OR "101" OR "2026"`},
		{"invalid utf-8 separates", "ab\xffcd", `"ab" OR "cd"`},
		{"overlong token dropped", long + " ok", `"ok"`},
		{"irregular forms added after their word", "where did the children go", `"children" OR "child" OR "go" OR "went" OR "gone"`},
		{"an irregular form is not repeated", "went go", `"went" OR "gone" OR "go"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BuildMatch(tc.in); got != tc.want {
				t.Errorf("BuildMatch(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestBuildMatchCapsTerms(t *testing.T) {
	var words []string
	for i := 0; i < 100; i++ {
		// word i has i%7+1 letters plus a unique suffix
		words = append(words, strings.Repeat("q", i%7+1)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	got := BuildMatch(strings.Join(words, " "))
	terms := strings.Split(got, " OR ")
	if len(terms) != maxMatchTerms {
		t.Fatalf("BuildMatch(100 words) has %d terms, want %d", len(terms), maxMatchTerms)
	}
	// 28 words have 8 or 9 runes; the other 4 kept must have 7.
	for _, term := range terms {
		if utf8.RuneCountInString(strings.Trim(term, `"`)) < 7 {
			t.Errorf("kept short term %s while longer ones were dropped", term)
		}
	}
}

// FuzzBuildMatch checks the shape of every expression BuildMatch builds: ""
// or FTS5 strings ("...", a quote inside doubled) joined by exactly " OR ",
// at most maxMatchTerms of them, each a distinct, non-empty, lower-case word
// (letters, digits and marks, at most maxTermBytes bytes) taken from the
// input or another form of an irregular word in it; and that FTS5 accepts
// it, bare and wrapped the way KeywordSearch wraps it. The seed corpus is in
// testdata/fuzz/FuzzBuildMatch.
func FuzzBuildMatch(f *testing.F) {
	for _, s := range []string{
		"", `"`, `""`, "a*", "-x", "NEAR(a b, 3)", "col:x", "^start", "(a OR b) AND NOT c",
		"東京タワー", "🎉🎉", "\xff\xfe", "x\x00y", "AND", "OR", "NOT", `a"b`, "{a b}:c", "a + b",
		strings.Repeat("word ", 2000), strings.Repeat("ü", 5000),
		"Hello WORLD went Children", "apple APPLE Apple", strings.Repeat("x", maxTermBytes+1) + " ok",
	} {
		f.Add(s)
	}
	var many []string // more distinct words than the cap
	for i := range 2 * maxMatchTerms {
		many = append(many, fmt.Sprintf("word%d", i))
	}
	f.Add(strings.Join(many, " "))
	db := openTestDB(f)
	st, err := db.Prepare(`SELECT count(*) FROM f WHERE f MATCH ?`)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m := BuildMatch(in)
		if m == "" {
			return
		}
		terms, err := parseMatch(m)
		if err != nil {
			t.Fatalf("BuildMatch(%s) = %s: %v", clip(in), clip(m), err)
		}
		if len(terms) > maxMatchTerms {
			t.Fatalf("BuildMatch(%s) = %s: %d terms, want at most %d", clip(in), clip(m), len(terms), maxMatchTerms)
		}
		lower := strings.ToLower(in)
		seen := map[string]bool{}
		for _, term := range terms {
			switch {
			case term == "":
				t.Fatalf("BuildMatch(%s) = %s: an empty term", clip(in), clip(m))
			case len(term) > maxTermBytes:
				t.Fatalf("BuildMatch(%s) = %s: term %s has %d bytes, want at most %d", clip(in), clip(m), clip(term), len(term), maxTermBytes)
			case seen[term]:
				t.Fatalf("BuildMatch(%s) = %s: term %q twice", clip(in), clip(m), term)
			case strings.ToLower(term) != term:
				t.Fatalf("BuildMatch(%s) = %s: term %q is not lower case", clip(in), clip(m), term)
			case !strings.Contains(lower, term) && irregularForms[term] == nil:
				t.Fatalf("BuildMatch(%s) = %s: term %q is neither in the lower-cased input nor an irregular form", clip(in), clip(m), term)
			}
			seen[term] = true
			for i, r := range term {
				// Stated again here, not isWordRune: a test that asked
				// BuildMatch's own predicate would agree with its bug.
				if r == utf8.RuneError || !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.Is(unicode.M, r) {
					t.Fatalf("BuildMatch(%s) = %s: term %q has %q at byte %d, not a letter, digit or mark", clip(in), clip(m), term, r, i)
				}
			}
		}
		// Bare and wrapped the way KeywordSearch wraps it.
		for _, q := range []string{m, `ns : "n610" AND text : (` + m + `)`} {
			var n int
			if err := st.QueryRow(q).Scan(&n); err != nil {
				t.Fatalf("BuildMatch(%s) = %s: MATCH error: %v", clip(in), clip(q), err)
			}
		}
	})
}

// clip quotes s for a failure message, cut to its first 200 bytes.
func clip(s string) string {
	if len(s) <= 200 {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:200]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// parseMatch reads m as FTS5 strings ("...", a quote inside doubled) joined
// by " OR " and returns them unquoted, or an error saying at which byte m
// departs from that shape.
func parseMatch(m string) ([]string, error) {
	var terms []string
	for i := 0; ; {
		if i >= len(m) || m[i] != '"' {
			return nil, fmt.Errorf("byte %d: want the opening quote of a term", i)
		}
		open := i
		i++
		var b strings.Builder
		for {
			j := strings.IndexByte(m[i:], '"')
			if j < 0 {
				return nil, fmt.Errorf("byte %d: the term opened there is not closed", open)
			}
			b.WriteString(m[i : i+j])
			i += j + 1
			if i < len(m) && m[i] == '"' { // a doubled quote stands for one
				b.WriteByte('"')
				i++
				continue
			}
			break
		}
		terms = append(terms, b.String())
		if i == len(m) {
			return terms, nil
		}
		if !strings.HasPrefix(m[i:], " OR ") {
			return nil, fmt.Errorf(`byte %d: want " OR " after a term`, i)
		}
		i += len(" OR ")
	}
}

func TestParseMatch(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // nil: an error
	}{
		{"one", `"a"`, []string{"a"}},
		{"two", `"a" OR "b"`, []string{"a", "b"}},
		{"doubled quote", `"a""b"`, []string{`a"b`}},
		{"an OR inside a string", `"a"" OR ""b"`, []string{`a" OR "b`}},
		{"empty string", `""`, []string{""}},
		{"bare word", `a`, nil},
		{"not closed", `"a`, nil},
		{"AND", `"a" AND "b"`, nil},
		{"two spaces", `"a"  OR "b"`, nil},
		{"trailing OR", `"a" OR `, nil},
		{"lone quote inside", `"a"b"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMatch(tc.in)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("parseMatch(%q) = %q, want an error", tc.in, got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("parseMatch(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}
