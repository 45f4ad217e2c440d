package chunker

import "unicode/utf8"

// EstimateTokens estimates the number of model tokens in s without a
// tokenizer: one per CJK, kana or hangul rune, plus one per 4 bytes (rounded
// up) of all other text, so Latin text costs about one per 4 characters. It is
// never 0 for a non-empty s, never more than len(s), and does not allocate.
func EstimateTokens(s string) int {
	z, _ := measure(s)
	return z.tokens()
}

// size is what EstimateTokens counts of a text. Sizes add exactly (unlike
// token counts, which round), so the tokens of a prefix and a growing piece
// can be kept as a running sum.
type size struct {
	narrow int // bytes outside CJK, kana and hangul
	wide   int // CJK, kana and hangul runes
}

func (z size) tokens() int { return z.wide + (z.narrow+3)/4 }

func (z size) plus(o size) size { return size{z.narrow + o.narrow, z.wide + o.wide} }

// measure returns the size of s and whether s is valid UTF-8.
func measure(s string) (z size, valid bool) {
	valid = true
	wideBytes := 0
	for i := 0; i < len(s); {
		// Skip ASCII eight bytes at a time: it is most text and always narrow.
		for i+8 <= len(s) {
			w := s[i : i+8]
			if (w[0]|w[1]|w[2]|w[3]|w[4]|w[5]|w[6]|w[7])&0x80 != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			valid = false
		case isWide(r):
			z.wide++
			wideBytes += n
		}
		i += n
	}
	z.narrow = len(s) - wideBytes
	return z, valid
}

// isWide reports whether r is a CJK ideograph, kana, hangul or CJK
// punctuation or fullwidth form: scripts a tokenizer spends about one token
// per character on.
func isWide(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r <= 0x11FF: // Hangul Jamo
		return true
	case r < 0x2E80:
		return false
	case r <= 0x9FFF: // radicals, CJK punctuation, kana, bopomofo, ext. A, unified ideographs
		return true
	case r >= 0xA960 && r <= 0xA97F, // Hangul Jamo extended A
		r >= 0xAC00 && r <= 0xD7FF,   // Hangul syllables, Jamo extended B
		r >= 0xF900 && r <= 0xFAFF,   // CJK compatibility ideographs
		r >= 0xFF00 && r <= 0xFFEF,   // fullwidth and halfwidth forms
		r >= 0x20000 && r <= 0x3FFFF: // CJK extensions B and later
		return true
	}
	return false
}
