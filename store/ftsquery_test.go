package store

import (
	"database/sql"
	"strings"
	"testing"
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

func FuzzBuildMatch(f *testing.F) {
	for _, s := range []string{
		"", `"`, `""`, "a*", "-x", "NEAR(a b, 3)", "col:x", "^start", "(a OR b) AND NOT c",
		"東京タワー", "🎉🎉", "\xff\xfe", "x\x00y", "AND", "OR", "NOT", `a"b`, "{a b}:c", "a + b",
		strings.Repeat("word ", 2000), strings.Repeat("ü", 5000),
	} {
		f.Add(s)
	}
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
		if strings.Count(m, " OR ")+1 > maxMatchTerms {
			t.Fatalf("BuildMatch(%q) has more than %d terms", in, maxMatchTerms)
		}
		// Bare and wrapped the way KeywordSearch wraps it.
		for _, q := range []string{m, `ns : "n610" AND text : (` + m + `)`} {
			var n int
			if err := st.QueryRow(q).Scan(&n); err != nil {
				t.Fatalf("BuildMatch(%q) = %q: MATCH error: %v", in, q, err)
			}
		}
	})
}
