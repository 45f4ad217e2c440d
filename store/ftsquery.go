package store

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxMatchTerms caps the terms of one MATCH expression.
	maxMatchTerms = 32
	// maxTermBytes drops tokens longer than this (no word is that long).
	maxTermBytes = 128
)

// BuildMatch returns an FTS5 MATCH expression for any user text, or "" when
// the text has no searchable term. It never produces an FTS5 syntax error:
// it extracts word tokens (runs of Unicode letters, digits and marks),
// lowercases them, cuts Chinese, Japanese and Korean runs into the words the
// index holds for them (see indexForm: "人工智能" gives 人工, 智能 and
// 人工智能) and drops CJK stop words (的, の, 에서, ...) always, drops
// duplicates, drops common English stop words when other terms remain,
// keeps at most 32 (the longest, as a proxy for the rarest), quotes each as
// an FTS5 string ("term", a quote doubled) and joins them with OR.
// Operators, column filters, prefixes and invalid UTF-8 in the input are
// treated as separators, never as syntax.
func BuildMatch(text string) string { return joinTerms(matchTerms(text)) }

// matchTerms returns the query terms BuildMatch joins, in query order.
func matchTerms(text string) []string {
	type term struct {
		s     string
		runes int
		order int
		stop  bool
	}
	var terms []term
	seen := map[string]bool{}
	nonStop := 0
	// add appends tok unless it is too long or seen; a CJK term (stop words
	// already dropped) is never an English stop word.
	add := func(tok string, runes int, cjk bool) {
		if len(tok) > maxTermBytes || seen[tok] {
			return
		}
		seen[tok] = true
		t := term{s: tok, runes: runes, order: len(terms), stop: !cjk && stopWords[tok]}
		if !t.stop {
			nonStop++
		}
		terms = append(terms, t)
	}
	for start := 0; start < len(text); {
		// skip separators
		r, size := utf8.DecodeRuneInString(text[start:])
		if !isWordRune(r, size) {
			start += size
			continue
		}
		end := start + size
		runes := 1
		for end < len(text) {
			r, size := utf8.DecodeRuneInString(text[end:])
			if !isWordRune(r, size) {
				break
			}
			end += size
			runes++
		}
		word := text[start:end]
		start = end
		if !hasCJK(word) {
			add(strings.ToLower(word), runes, false)
			continue
		}
		// Cut CJK runs into index words; the rest of the word (Latin
		// letters or digits next to them) is a term of its own, as the
		// index separates them too.
		prev := 0
		for _, run := range cjkRuns(word) {
			if run.start > prev {
				other := word[prev:run.start]
				add(strings.ToLower(other), utf8.RuneCountInString(other), false)
			}
			for _, t := range queryTerms(word[run.start:run.end], run.class) {
				add(t, utf8.RuneCountInString(t), true)
			}
			prev = run.end
		}
		if prev < len(word) {
			add(strings.ToLower(word[prev:]), utf8.RuneCountInString(word[prev:]), false)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	if nonStop > 0 && nonStop < len(terms) {
		kept := terms[:0]
		for _, t := range terms {
			if !t.stop {
				kept = append(kept, t)
			}
		}
		terms = kept
	}
	words := make([]string, len(terms))
	for i, t := range terms {
		words[i] = t.s
	}
	if expand := withIrregularForms(words); len(expand) > len(terms) {
		terms = terms[:0:0]
		for i, t := range expand {
			terms = append(terms, term{s: t, runes: utf8.RuneCountInString(t), order: i})
		}
	}
	if len(terms) > maxMatchTerms {
		sort.SliceStable(terms, func(i, j int) bool { return terms[i].runes > terms[j].runes })
		terms = terms[:maxMatchTerms]
		sort.Slice(terms, func(i, j int) bool { return terms[i].order < terms[j].order })
	}
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = t.s
	}
	return out
}

// joinTerms quotes each term as an FTS5 string and joins them with OR.
func joinTerms(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(quoteTerm(t))
	}
	return b.String()
}

// quoteTerm quotes t as an FTS5 string, doubling any quote.
func quoteTerm(t string) string { return `"` + strings.ReplaceAll(t, `"`, `""`) + `"` }

// isWordRune reports whether r (decoded with size bytes) belongs to a word.
// Invalid UTF-8 (RuneError of size 1) separates words.
func isWordRune(r rune, size int) bool {
	if r == utf8.RuneError && size <= 1 {
		return false
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.Is(unicode.M, r)
}

// stopWords are common English words dropped from a query that has other
// terms: they match most chunks, cost the most to rank and add almost nothing
// to BM25 (their IDF is near zero).
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
a about above after again against all am an and any are aren as at
be because been before being below between both but by
can cannot could couldn did didn do does doesn doing don down during
each few for from further had hadn has hasn have haven having he her here hers herself him himself his how
i if in into is isn it its itself just let ll me more most mustn my myself
no nor not now of off on once only or other ought our ours ourselves out over own
re s same shan she should shouldn so some such t than that the their theirs them themselves then there these they this those through to too
under until up ve very was wasn we were weren what when where which while who whom why will with won would wouldn
you your yours yourself yourselves
us yes yeah oh ok okay really
`) {
		m[w] = true
	}
	return m
}()
