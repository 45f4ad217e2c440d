package embedder

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// asciiFold maps an ASCII byte to its lower-case form if it is a letter or
// digit, and to 0 if it separates words.
var asciiFold = func() (t [utf8.RuneSelf]byte) {
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c
	}
	for c := byte('a'); c <= 'z'; c++ {
		t[c] = c
		t[c-'a'+'A'] = c
	}
	return t
}()

// tokenize fills s.buf with "<w1><w2>…" lower-cased, followed by 8 zero bytes
// so that 8-byte loads never run past the end, and s.toks with the spans.
func (s *builtinScratch) tokenize(text string) {
	buf := s.buf[:0]
	if need := 3*len(text) + 16; cap(buf) < need { // ASCII never needs more
		buf = make([]byte, 0, need)
	}
	toks := s.toks[:0]
	var cur token
	in := false
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf {
			f := asciiFold[c]
			if f == 0 {
				if in {
					buf = append(buf, '>')
					cur.end = int32(len(buf) - 1)
					toks = append(toks, cur)
					in = false
				}
				i++
				continue
			}
			if !in {
				buf = append(buf, '<')
				cur = token{start: int32(len(buf)), ascii: true}
				in = true
			}
			buf = append(buf, f)
			for i++; i < len(text); i++ { // the rest of an ASCII run
				c := text[i]
				if c >= utf8.RuneSelf || asciiFold[c] == 0 {
					break
				}
				buf = append(buf, asciiFold[c])
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if r >= latinFoldFirst && r < latinFoldFirst+rune(len(latinFold)) && latinFold[r-latinFoldFirst] != "" {
			if !in {
				buf = append(buf, '<')
				cur = token{start: int32(len(buf)), ascii: true}
				in = true
			}
			buf = append(buf, latinFold[r-latinFoldFirst]...)
			continue
		}
		if r >= 0x300 && r < 0x370 { // combining diacritics: dropped, like precomposed accents
			continue
		}
		cjk := isCJK(r)
		word := !cjk && (unicode.IsLetter(r) || unicode.IsDigit(r) || (in && unicode.Is(unicode.M, r)))
		if in && !word { // separators, symbols, invalid UTF-8, CJK
			buf = append(buf, '>')
			cur.end = int32(len(buf) - 1)
			toks = append(toks, cur)
			in = false
		}
		switch {
		case cjk: // a word of its own
			buf = append(buf, '<')
			start := int32(len(buf))
			buf = utf8.AppendRune(buf, r)
			toks = append(toks, token{start: start, end: int32(len(buf)), cjk: true})
			buf = append(buf, '>')
		case word:
			if !in {
				buf = append(buf, '<')
				cur = token{start: int32(len(buf))}
				in = true
			}
			cur.ascii = false
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		}
	}
	if in {
		buf = append(buf, '>')
		cur.end = int32(len(buf) - 1)
		toks = append(toks, cur)
	}
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0)
	s.buf, s.toks = buf, toks
}

// latinFold folds the letters of Latin-1 Supplement and Latin Extended-A
// (U+00C0..U+017F) to lower-case ASCII ("é" to "e", "ß" to "ss", "Ł" to "l"),
// so that a query typed without accents finds the accented text; "" marks the
// two symbols of the range (× and ÷).
var latinFold = func() []string {
	const spec = `a a a a a a ae c e e e e i i i i d n o o o o o - o u u u u y th ss
a a a a a a ae c e e e e i i i i d n o o o o o - o u u u u y th y
a a a a a a c c c c c c c c d d d d e e e e e e e e e e g g g g
g g g g h h h h i i i i i i i i i i ij ij j j k k k l l l l l l l
l l l n n n n n n n n n o o o o o o oe oe r r r r r r s s s s s s
s s t t t t t t u u u u u u u u u u u u w w y y y z z z z z z s`
	f := strings.Fields(spec)
	if len(f) != 0x180-latinFoldFirst {
		panic("embedder: latinFold has " + strconv.Itoa(len(f)) + " entries")
	}
	for i := range f {
		if f[i] == "-" {
			f[i] = ""
		}
	}
	return f
}()

const latinFoldFirst = 0xC0

// isCJK reports whether r is written without spaces between words, so that
// each character counts as a word.
func isCJK(r rune) bool {
	if r < 0x2E80 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}
