package store

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// cjkSnippetRunes is about how many characters a snippet cut by cjkSnippet
// shows: FTS5's 16 tokens are about as many CJK words, ~40 characters.
const cjkSnippetRunes = 40

// cjkSnippet returns a snippet of text around the first occurrence of any
// of terms, with every occurrence inside it marked « », or "" when no term
// occurs. It serves keyword queries with CJK terms, whose matches FTS5's
// snippet cannot mark: a sub-word (智能 in 人工智能) or a bigram (학교 in
// 학교에서) is a word of fts_words, not a token of the text FTS5 cuts the
// snippet from. Terms are matched as substrings of the lowercased text, a
// Latin term only at the start of a word, so it also marks the start of a
// longer one ("run" in "running", as porter matched it). KeywordSearch uses
// it for chunks with CJK text only; others get FTS5's snippet.
func cjkSnippet(text string, terms []string) string {
	lower := lowerSameSize(text)
	type span struct{ start, end int }
	var spans []span
	for _, t := range terms {
		if t == "" {
			continue
		}
		first, _ := utf8.DecodeRuneInString(t)
		wordStart := classOf(first) == classOther // a Latin term starts a word
		for off := 0; off < len(lower); {
			i := strings.Index(lower[off:], t)
			if i < 0 {
				break
			}
			at := off + i
			off = at + len(t)
			if prev, _ := utf8.DecodeLastRuneInString(lower[:at]); wordStart && at > 0 &&
				(unicode.IsLetter(prev) || unicode.IsDigit(prev)) && classOf(prev) == classOther {
				continue // inside a word
			}
			spans = append(spans, span{at, at + len(t)})
		}
	}
	if len(spans) == 0 {
		return ""
	}
	// Longest first at each start, then drop spans inside or across an
	// earlier one: marks never nest or cross.
	sortSpans := func(a, b span) bool {
		if a.start != b.start {
			return a.start < b.start
		}
		return a.end > b.end
	}
	for i := 1; i < len(spans); i++ { // insertion sort: few spans
		for j := i; j > 0 && sortSpans(spans[j], spans[j-1]); j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
	kept := spans[:1]
	for _, sp := range spans[1:] {
		if sp.start >= kept[len(kept)-1].end {
			kept = append(kept, sp)
		}
	}
	// The window starts a quarter of its width before the first match (at
	// a rune boundary) and ends cjkSnippetRunes characters later.
	from := kept[0].start
	for n := 0; n < cjkSnippetRunes/4 && from > 0; n++ {
		_, size := utf8.DecodeLastRuneInString(text[:from])
		from -= size
	}
	to := from
	for n := 0; n < cjkSnippetRunes && to < len(text); n++ {
		_, size := utf8.DecodeRuneInString(text[to:])
		to += size
	}
	var b strings.Builder
	if from > 0 {
		b.WriteString(snippetEllips)
	}
	at := from
	for _, sp := range kept {
		if sp.start >= to {
			break
		}
		if sp.end > to { // a match cut by the window's end: extend to it
			to = sp.end
		}
		b.WriteString(text[at:sp.start])
		b.WriteString(snippetOpen)
		b.WriteString(text[sp.start:sp.end])
		b.WriteString(snippetClose)
		at = sp.end
	}
	b.WriteString(text[at:to])
	if to < len(text) {
		b.WriteString(snippetEllips)
	}
	return b.String()
}

// lowerSameSize returns text lowercased where that keeps every rune's byte
// offset (which is nearly always), else text itself.
func lowerSameSize(text string) string {
	if strings.IndexFunc(text, func(r rune) bool { return r >= utf8.RuneSelf || 'A' <= r && r <= 'Z' }) < 0 {
		return text // lowercase ASCII
	}
	b := []byte(text)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			i++
			continue
		}
		if l := unicode.ToLower(r); l != r {
			if utf8.RuneLen(l) != size {
				return text
			}
			utf8.EncodeRune(b[i:], l)
		}
		i += size
	}
	return string(b)
}

// hasCJKTerm reports whether any of terms has a CJK rune.
func hasCJKTerm(terms []string) bool {
	for _, t := range terms {
		if hasCJK(t) {
			return true
		}
	}
	return false
}
