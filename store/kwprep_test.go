package store

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// TestPreparedTokensEqualTokenize: a row counted by kwCounter and resolved
// under the lock gives the index what tokenize gives it (term ids, weighted
// frequencies, length), for adds that intern new tokens and for removes
// that skip tokens the index never saw: counted without an index (count,
// as a load counts), by the ids the index holds (countKnown, as a prep
// counts), and against another index, whose ids it must not use.
func TestPreparedTokensEqualTokenize(t *testing.T) {
	docs := []kwDoc{
		{rowid: 1, ns: "n", sessionKey: "k", body: "Ana: the weather in Berlin, the WEATHER again", ctx: "2026-01-01\nBo: running runs ran"},
		{rowid: 2, ns: "n", sessionKey: "k2", body: "人工 智能 人工智能", words: "人工 智能", ctx: "Ana: 人工智能"},
		{rowid: 3, ns: "other", body: "café résumé naïve weather", words: "", ctx: ""},
		{rowid: 4, ns: "n", body: "", ctx: "only context words context"},
		{rowid: 5, ns: "n", sessionKey: "k", body: "Bo: the weather in Berlin, a new word", ctx: "Ana: weather"},
		{rowid: 6, ns: "n", sessionKey: "k", body: "Bo: Berlin again and again", ctx: "2026-01-02"},
		{rowid: 7, ns: "n", sessionKey: "k", body: "Ana: weather weather", ctx: "Bo: the weather in Berlin again, new words"},
		{rowid: 8, ns: "n", sessionKey: "k", body: "Bo: Berlin", ctx: "Ana: the weather in Berlin"},
	}
	tok, err := getTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer putTokenizer(tok)
	for _, intern := range []bool{true, false} {
		a, b := newKWIndex(), newKWIndex()
		if !intern { // a remove: the index knows some of the tokens only
			for _, x := range []*kwIndex{a, b} {
				ps := new(kwPoster)
				if err := x.addLocked(tok, &docs[0], newKWScratch(), ps); err != nil {
					t.Fatal(err)
				}
				x.flushLocked(ps)
			}
		}
		// other holds some of the tokens under other ids than b.
		other := newKWIndex()
		for _, d := range []int{5, 2} {
			ps := new(kwPoster)
			if err := other.addLocked(tok, &docs[d], newKWScratch(), ps); err != nil {
				t.Fatal(err)
			}
			other.flushLocked(ps)
		}
		var c kwCounter
		for i := range docs {
			want, err := a.tokenize(tok, &docs[i], intern, newKWScratch())
			if err != nil {
				t.Fatal(err)
			}
			wantF2, ok := want.f2s()
			if !ok {
				t.Fatalf("doc %d: tokenize gave a term twice: %v", docs[i].rowid, want.terms)
			}
			var kt kwTokens
			switch i % 3 {
			case 0: // without an index, as a load counts
				kt, err = c.count(tok, &docs[i])
			case 1: // by the ids b holds, as a prep counts
				kt, err = c.countKnown(tok, &docs[i], b, i%2 == 0)
			case 2: // against another index: resolved by text
				kt, err = c.countKnown(tok, &docs[i], other, true)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := b.resolveLocked(kt, intern, nil)
			gotF2, ok := got.f2s()
			if !ok {
				t.Fatalf("doc %d: resolved a term twice: %v", docs[i].rowid, got.terms)
			}
			if got.length != want.length || !maps.Equal(gotF2, wantF2) {
				t.Fatalf("doc %d (intern %v): counted %d tokens %v, tokenize %d %v", docs[i].rowid, intern, got.length, gotF2, want.length, wantF2)
			}
		}
		if !maps.Equal(a.terms, b.terms) {
			t.Fatalf("intern %v: dictionaries differ: %v vs %v", intern, b.terms, a.terms)
		}
	}
}

// f2s returns dt's frequencies by term id, and false when a term id is
// there twice.
func (dt docTokens) f2s() (map[uint32]uint32, bool) {
	m := make(map[uint32]uint32, len(dt.terms))
	for _, t := range dt.terms {
		m[t.id] = t.f2
	}
	return m, len(m) == len(dt.terms)
}

// TestHexTokensAreOneToken: FTS5's tokenizer makes one token of every
// namespace and session key column value (nsToken, skToken), whatever the
// name: empty, punctuation and spaces, CJK, and one whose token passes
// FTS5's 32,768-byte cut. The keyword index counts them as one token each
// (kwTokenColumns) instead of tokenizing them.
func TestHexTokensAreOneToken(t *testing.T) {
	tok, err := getTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer putTokenizer(tok)
	names := []string{"", "a", "agent:main:telegram:direct:5000007919", "with spaces, commas; and - dashes", "会话 東京 세션", "\x00\xff", strings.Repeat("long name ", 2000)}
	for _, name := range names {
		for _, v := range []string{nsToken(name), skToken(name)} {
			n, err := tok.tokens(v, tokenizeDocument, func([]byte) {})
			if err != nil || n != 1 {
				t.Errorf("%q (%d bytes) as a column value: %d tokens, %v; want 1", name[:min(len(name), 40)], len(name), n, err)
			}
		}
	}
	if kwTokenColumns != 2 {
		t.Errorf("kwTokenColumns = %d, want 2: the ns and sk columns", kwTokenColumns)
	}
}

// TestLineTokensEqualTokenize: countKnown tokenizes a row's text and
// context a line at a time and replays the lines it tokenized last. Over a
// session whose contexts repeat the rows before them (a date line, then
// the previous rows' lines: one of them of several lines, one CJK, one
// with blank lines and a carriage return), each row resolves to what
// tokenize gives, while the index learns each row's new words after it is
// counted (a line kept while its word was new is replayed once the index
// holds it), and the lines replayed are the ones kept; a row that keeps
// nothing (the next row is of another session) leaves them as they are.
func TestLineTokensEqualTokenize(t *testing.T) {
	tok, err := getTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer putTokenizer(tok)
	bodies := []string{
		"Ana: the weather in Berlin is running cold",
		"Bo: zebras everywhere\nand more zebras\n\nAna's quokka",
		"Ana: 人工智能 and weather",
		"Bo: quokka zebras, again\r\nthe weather",
		"Ana: nothing new here: the weather in Berlin",
		"Bo: brand-new xylophone words",
		"Ana: xylophone",
	}
	date := "7 May 2023"
	a, b := newKWIndex(), newKWIndex() // a by tokenize, b by countKnown
	var c kwCounter
	check := func(d kwDoc, keep bool) {
		t.Helper()
		want, err := a.tokenize(tok, &d, true, newKWScratch())
		if err != nil {
			t.Fatal(err)
		}
		kt, err := c.countKnown(tok, &d, b, keep)
		if err != nil {
			t.Fatal(err)
		}
		got := b.resolveLocked(kt, true, nil)
		wantF2, gotF2 := termF2s(t, a, want), termF2s(t, b, got)
		if got.length != want.length || !maps.Equal(gotF2, wantF2) {
			t.Fatalf("row %d: counted %d tokens %v, tokenize %d %v", d.rowid, got.length, gotF2, want.length, wantF2)
		}
	}
	for i, body := range bodies {
		ctx := date
		for j := max(0, i-2); j < i; j++ {
			ctx += "\n" + bodies[j]
		}
		d := kwDoc{rowid: int64(i + 1), ns: "n", sessionKey: "k", body: body, ctx: ctx}
		if i >= 1 {
			prev := strings.Split(bodies[i-1], "\n")
			if c.lines.find(prev[len(prev)-1]) == nil {
				t.Fatalf("row %d: the previous row's last line is not kept for its context", i+1)
			}
		}
		check(d, true)
		if i == 3 { // a row of another session between two of this one keeps nothing
			other := kwDoc{rowid: 50, ns: "n", sessionKey: "k2", body: "Cy: a walrus,\nother words", ctx: date + "\nDi: other context"}
			texts := func() (ts [kwLineSlots]string) {
				for i := range c.lines.slot {
					ts[i] = c.lines.slot[i].text
				}
				return ts
			}
			before := texts()
			check(other, false)
			if texts() != before || c.lines.find("other words") != nil {
				t.Fatal("a row that keeps nothing changed the lines kept")
			}
		}
		for _, x := range []*kwIndex{a, b} { // the row is posted: its new words are known
			ps := new(kwPoster)
			if err := x.addLocked(tok, &d, newKWScratch(), ps); err != nil {
				t.Fatal(err)
			}
			x.flushLocked(ps)
		}
	}
	// More lines not kept than the ring holds, before one it holds: they
	// take its slot before it is replayed.
	if c.lines.find(date) == nil {
		t.Fatal("the date line is not kept")
	}
	var many []string
	for i := range kwLineSlots + 1 {
		many = append(many, fmt.Sprintf("Bo: line %d of many, weather", i))
	}
	check(kwDoc{rowid: 100, ns: "n", sessionKey: "k", body: "Ana: the end", ctx: strings.Join(many, "\n") + "\n" + date + "\n\n"}, true)
}

// termF2s returns dt's frequencies by term text in x, failing on a term
// there twice.
func termF2s(t *testing.T, x *kwIndex, dt docTokens) map[string]uint32 {
	t.Helper()
	byID := make(map[uint32]string, len(x.terms))
	for s, id := range x.terms {
		byID[id] = s
	}
	m := make(map[string]uint32, len(dt.terms))
	for _, tm := range dt.terms {
		s, ok := byID[tm.id]
		if !ok {
			t.Fatalf("term id %d not in the index", tm.id)
		}
		if _, dup := m[s]; dup {
			t.Fatalf("term %q counted twice: %v", s, dt.terms)
		}
		m[s] = tm.f2
	}
	return m
}
