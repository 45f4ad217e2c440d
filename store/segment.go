package store

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chinese, Japanese and Korean text for the keyword index.
//
// FTS5's unicode61 tokenizer keeps a whole run of Han, Kana or Hangul
// characters as one token, so a word inside a longer run ("智能" in
// "人工智能", "学習" in "機械学習を", "학교" in "학교에서") could never be
// found. The store therefore gives the FTS index its own text for a chunk
// that has CJK characters (chunks.fts_seg and chunks.fts_words, see
// migration 0004), and BuildMatch turns a query into the same words:
//
//   - Han runs (Chinese, and Japanese kanji) are cut into words by gse with
//     its simplified-Chinese dictionary, the jieba algorithm (dictionary DAG
//     plus HMM for unknown words). The words are separated in fts_seg by a
//     ZERO WIDTH SPACE (a separator for unicode61, invisible, stripped from
//     snippets); search mode adds the dictionary words of two and three
//     characters found inside a longer word to fts_words, so "人工智能" is
//     indexed as 人工智能 + 人工 + 智能.
//   - Hiragana and Katakana runs are split where the script changes, which
//     in Japanese is nearly always a word boundary (particles and
//     inflections are Hiragana, loanwords Katakana, stems kanji: 東京 | で,
//     プロジェクト | の). Hiragana, Katakana and Hangul runs (a Korean
//     eojeol: a word with its particles attached, as in 학교에서) stay whole
//     and add their character bigrams to fts_words, so a word of two or more
//     characters is found inside a longer run (ツリー in スカイツリー, 학교 in
//     학교에서); a Hangul run also adds its first syllable, so a one-syllable
//     noun followed by a particle (책을, 집에) is found too. No dictionary
//     here covers Korean, and bigrams need none; gse's Japanese dictionary
//     was rejected (below).
//   - A CJK run is also separated from a letter or digit next to it
//     (用Python写 → 用 | Python | 写).
//   - Everything else goes to unicode61 and porter unchanged: a chunk
//     without CJK characters has NULL in both columns and costs one scan of
//     its bytes (no allocation).
//
// Segmenter choice (measured on the team's shared 2-core box; see the
// issue 4 item 4 report): gse v0.80.3 and gojieba v1.4.6 cut Chinese the
// same way (both implement jieba; both give 人工|智能|人工智能 in search
// mode). gojieba is about three times as fast (2.5-4.9 MB/s against
// 0.6-1.4 MB/s on a Chinese novel) and keeps its dictionary (139 MB
// resident) outside the Go heap, but it is C++ through cgo, it reads its
// dictionary files at run time from the module's source directory (a
// deployed binary has none, and a missing file panics), and its dictionary
// lacks traditional and Japanese forms (東京 → 東|京, 機械 → 機|械). gse is
// pure Go, embeds its dictionaries in the binary (+32 MB) and cuts
// 東京|大学|機械|学習. Its simplified dictionary (zh_s) was chosen over
// zh_s+zh_t: on traditional and Japanese sentences both cut the same words
// (zh_t adds a few sub-words of traditional compounds), for 135 MB of heap
// instead of 206 MB and a 1.9-3.9 s load instead of 2.9-6.9 s. gse's
// Japanese dictionary was rejected: 450 MB of heap, a 7 s load and worse
// cuts (台か|ら, 昨|日の; loaded with the Chinese one it spoils Chinese:
// 研究人|工智能). The dictionary is loaded in the background by Open for a
// shard that holds Han text, or by ingest of Han text, never by a search
// (segment_load.go, which also keeps only what the cut reads of it), so a
// worker that never sees Han text never loads it.
//
// tokenizerVersion names everything above that decides the indexed words:
// the segmenter and its dictionary, the rune classes, the bigram and
// sub-word rules. Change it with any of them: a shard records the version it
// was indexed with (meta 'tokenizer', and chunks.fts_ver per chunk) and Open
// re-indexes the chunks of another version (see reindexKeywords). A change
// of what counts as CJK must also revisit the chunks indexed as having none
// (fts_ver 0).
const tokenizerVersion = 1

// wordSep separates the words of a CJK run in chunks.fts_seg: ZERO WIDTH
// SPACE, a separator for unicode61 (category Cf) that does not show.
const wordSep = "\u200b"

// runeClass is the kind of a rune for segmentation.
type runeClass uint8

const (
	classOther    runeClass = iota // left to unicode61 and porter
	classHan                       // Han ideographs: cut by the dictionary
	classHiragana                  // run + bigrams
	classKatakana                  // run + bigrams
	classHangul                    // run + bigrams + first syllable
)

// classOf returns the class of r. Only letters and numbers (FTS5 token
// characters) are CJK: a CJK punctuation mark or symbol separates words.
func classOf(r rune) runeClass {
	if r < 0x1100 { // below Hangul Jamo: no CJK script
		return classOther
	}
	if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
		return classOther
	}
	switch {
	case unicode.Is(unicode.Han, r):
		return classHan
	case unicode.Is(unicode.Hangul, r):
		return classHangul
	case unicode.Is(unicode.Hiragana, r):
		return classHiragana
	case unicode.Is(unicode.Katakana, r), isKanaMark(r):
		return classKatakana
	}
	return classOther
}

// isKanaMark reports whether r is a prolonged sound or voicing mark of the
// Common script, used with Katakana and sometimes Hiragana: it continues
// the Kana run it follows.
func isKanaMark(r rune) bool { return r == 0x30FC || r == 0xFF70 || r == 0xFF9E || r == 0xFF9F }

// hasCJK reports whether s has a rune of a CJK class. Every such rune is
// U+1100 or above, encoded in UTF-8 with a lead byte of 0xE1 or more, so
// other text is skipped without decoding: eight ASCII bytes at a time,
// then byte by byte (ingest asks it of every chunk's text and context).
func hasCJK(s string) bool {
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if w&0x8080808080808080 == 0 {
				i += 8
				continue
			}
		}
		if s[i] < 0xE1 {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if classOf(r) != classOther {
			return true
		}
		i += size
	}
	return false
}

// needsSep reports whether unicode61 might keep the rune r (decoded with
// size bytes) in one token with a CJK word next to it, which then needs a
// separator to be a token of its own. SQLite's tables are of Unicode 6.1
// and treat code points assigned since then as token characters, so only
// spaces and the punctuation and symbols of old blocks (ASCII, Latin-1,
// General Punctuation, CJK Symbols and Punctuation, fullwidth forms) count
// as separators here; invalid UTF-8 needs one too.
func needsSep(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size <= 1:
		return true
	case r < utf8.RuneSelf:
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	case unicode.IsSpace(r):
		return false
	case r <= 0xBF, 0x2010 <= r && r <= 0x205E, 0x3000 <= r && r <= 0x303F, 0xFF00 <= r && r <= 0xFF65:
		return !unicode.IsPunct(r) && !unicode.IsSymbol(r)
	}
	return true
}

// cjkRun is a maximal run of runes of one CJK class within a text.
type cjkRun struct {
	class      runeClass
	start, end int // byte offsets
}

// cjkRuns returns the CJK runs of s in order.
func cjkRuns(s string) []cjkRun {
	var runs []cjkRun
	for i := 0; i < len(s); {
		if s[i] < 0xE1 {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		c := classOf(r)
		if c == classOther {
			i += size
			continue
		}
		j := i + size
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if rc := classOf(r); rc != c && !(c == classHiragana && isKanaMark(r)) {
				break
			}
			j += size
		}
		runs = append(runs, cjkRun{class: c, start: i, end: j})
		i = j
	}
	return runs
}

// indexForm returns what the FTS index sees of text: seg is text with
// wordSep between the words of its CJK runs and between a CJK run and a
// letter or digit next to it ("" when that changes nothing), and words holds
// the extra index words (sub-words, bigrams, first syllables) separated by
// spaces ("" when none). cjk is false, and both are "", when text has no CJK
// rune: it is then indexed as it is.
func indexForm(text string) (seg, words string, cjk bool) {
	if !hasCJK(text) {
		return "", "", false
	}
	runs := cjkRuns(text)
	var b, w strings.Builder
	b.Grow(len(text) + len(text)/4)
	changed := false
	addWord := func(s string) {
		if w.Len() > 0 {
			w.WriteByte(' ')
		}
		w.WriteString(s)
	}
	prev := 0
	for _, run := range runs {
		b.WriteString(text[prev:run.start])
		if r, size := utf8.DecodeLastRuneInString(text[:run.start]); run.start > 0 && needsSep(r, size) &&
			!strings.HasSuffix(b.String(), wordSep) { // after an adjacent run it has one
			b.WriteString(wordSep)
			changed = true
		}
		s := text[run.start:run.end]
		switch run.class {
		case classHan:
			d := hanForIndex()
			for i, word := range cutHan(d, s) {
				if i > 0 {
					b.WriteString(wordSep)
					changed = true
				}
				b.WriteString(word)
				for _, sub := range subWords(d, word) { // jieba's search mode
					addWord(sub)
				}
			}
		default:
			b.WriteString(s)
			for _, g := range phoneticWords(s, run.class, true) {
				addWord(g)
			}
		}
		if r, size := utf8.DecodeRuneInString(text[run.end:]); run.end < len(text) && needsSep(r, size) {
			b.WriteString(wordSep)
			changed = true
		}
		prev = run.end
	}
	b.WriteString(text[prev:])
	if changed {
		seg = b.String()
	}
	return seg, w.String(), true
}

// phoneticWords returns the extra words of a Kana or Hangul run s: its
// character bigrams when it is longer than two characters and, at index time
// (index true), the first syllable of a Hangul run of two or more.
func phoneticWords(s string, class runeClass, index bool) []string {
	n := utf8.RuneCountInString(s)
	var out []string
	if index && class == classHangul && n >= 2 {
		_, size := utf8.DecodeRuneInString(s)
		out = append(out, s[:size])
	}
	if n <= 2 {
		return out
	}
	for i := 0; ; {
		_, a := utf8.DecodeRuneInString(s[i:])
		if i+a >= len(s) {
			break
		}
		_, b := utf8.DecodeRuneInString(s[i+a:])
		out = append(out, s[i:i+a+b])
		i += a
	}
	return out
}

// cutHan cuts a run of Han characters into words with d (jieba's accurate
// mode, with the HMM for words the dictionary lacks). The words always join
// back into s.
func cutHan(d *hanDict, s string) []string {
	words := d.cut(s)
	off := 0
	for _, w := range words {
		if w == "" || !strings.HasPrefix(s[off:], w) {
			return []string{s} // never seen; keep the run whole
		}
		off += len(w)
	}
	if off != len(s) {
		return []string{s}
	}
	return words
}

// subWords returns the words of two and three characters that d knows
// inside word w, when w is longer than them.
func subWords(d *hanDict, w string) []string {
	if utf8.RuneCountInString(w) <= 2 {
		return nil
	}
	runes := []rune(w)
	var out []string
	for _, n := range [2]int{2, 3} {
		for i := 0; i+n <= len(runes) && n < len(runes); i++ {
			gram := string(runes[i : i+n])
			if f, ok := d.find(gram); ok && f > 0 {
				out = append(out, gram)
			}
		}
	}
	return out
}

// queryTerms returns the search terms of one CJK run of a query, the same
// words the index holds for it: for Han the words and their sub-words, for
// Kana and Hangul the run and its bigrams. Stop words are dropped, and so is
// everything derived from a run that is a stop word itself. A Han run before
// the dictionary is loaded, when no open shard holds Han text (hanForQuery),
// gives the run and its bigrams too: nothing indexed can match them then.
func queryTerms(s string, class runeClass) []string {
	var terms []string
	var d *hanDict
	if class == classHan {
		d = hanForQuery()
	}
	switch {
	case d != nil:
		for _, w := range cutHan(d, s) {
			if cjkStopWords[w] {
				continue
			}
			for _, t := range append(subWords(d, w), w) {
				if !cjkStopWords[t] {
					terms = append(terms, t)
				}
			}
		}
	default:
		if cjkStopWords[s] || class == classHiragana && utf8.RuneCountInString(s) == 1 {
			return nil // a lone Hiragana character is a particle or an inflection
		}
		terms = append(terms, s)
		for _, g := range phoneticWords(s, class, false) {
			if !cjkStopWords[g] {
				terms = append(terms, g)
			}
		}
	}
	return terms
}

// cjkStopWords are high-frequency Chinese, Japanese and Korean function
// words (particles, auxiliaries, pronouns, copulas, common inflection
// bigrams), dropped from every query: they match most CJK chunks and carry
// no topic. A query of nothing else has no term, hence no keyword match.
var cjkStopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
的 了 在 是 和 也 有 就 不 都 而 及 与 着 或 一个 没有 我们 你们 他们 她们 它们
我 你 他 她 它 这 那 之 把 被 让 给 对 从 向 吗 呢 吧 啊 呀 么 个 地 得 过 于 以 为
這 個 與 們 沒有 我們 你們 他們 對 從 嗎 為 過 著
の に は を が で と も へ や か な ね よ だ から まで より です ます でした ました した して
する いる ある こと これ それ あれ この その あの では には とは ので のに けど
について として という ている ません
은 는 이 가 을 를 의 에 도 와 과 로 에서 에게 으로 부터 까지 처럼 보다 하고 에는 에도
이다 입니다 습니다 니다 어요 아요 해요 있다 있는 있어요 그리고 하지만
`) {
		m[w] = true
	}
	return m
}()

// ftsIndexed is what the index holds for one chunk's text: the values of
// chunks.fts_seg, fts_words (nil for NULL) and fts_ver, and body, the text
// the FTS row indexes (fts_body: fts_seg, or the text itself).
type ftsIndexed struct {
	seg, words any
	ver        int64
	body       string
}

// newFTSIndexed returns what the index holds for text. Text without CJK
// costs one scan of its bytes and no allocation.
func newFTSIndexed(text string) ftsIndexed {
	fi := ftsIndexed{body: text}
	seg, words, cjk := indexForm(text)
	if !cjk {
		return fi
	}
	fi.ver = tokenizerVersion
	if seg != "" {
		fi.seg, fi.body = seg, seg
	}
	if words != "" {
		fi.words = words
	}
	return fi
}

// contextIndexForm returns what the index holds for a chunk's context:
// chunks.ctx_seg (nil for NULL: the context is indexed as it is), the text
// the keyword index holds as fts_ctx, and whether it has CJK characters (then
// the chunk's fts_ver must be tokenizerVersion, so that a tokenizer change
// re-indexes it). Its segmented form and extra words share the one column:
// both weigh as context.
func contextIndexForm(ctx string) (seg any, body string, cjk bool) {
	fi := newFTSIndexed(ctx)
	if fi.ver == 0 {
		return nil, ctx, false
	}
	body = fi.body
	if w, ok := fi.words.(string); ok && w != "" {
		body += " " + w
	}
	return body, body, true
}
