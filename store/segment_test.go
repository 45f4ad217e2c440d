package store

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Real sentences, one per language, each with a word that appears only
// inside a longer run of its script.
const (
	// "We are researching applications of artificial intelligence in medicine."
	zhSentence = "我们正在研究人工智能在医疗领域的应用。"
	// "I research machine learning at the University of Tokyo."
	jaSentence = "私は東京大学で機械学習を研究しています。"
	// "From the Tokyo Skytree observation deck we could see Mount Fuji."
	jaKatakana = "東京スカイツリーの展望台から富士山が見えました。"
	// "I met a friend at school yesterday."
	koSentence = "저는 어제 학교에서 친구를 만났어요."
)

func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want runeClass
	}{
		{'a', classOther}, {'é', classOther}, {'7', classOther}, {'。', classOther}, {'、', classOther},
		{'，', classOther}, {'Ａ', classOther}, {'🎉', classOther}, {'\u200b', classOther},
		{'人', classHan}, {'々', classHan}, {'〇', classHan},
		{'の', classHiragana}, {'ゞ', classHiragana},
		{'ア', classKatakana}, {'ー', classKatakana}, {'ｱ', classKatakana},
		{'학', classHangul}, {'ᄀ', classHangul},
	} {
		if got := classOf(tc.r); got != tc.want {
			t.Errorf("classOf(%q) = %d, want %d", tc.r, got, tc.want)
		}
	}
}

func TestCJKRunsSplitAtScriptChanges(t *testing.T) {
	text := "来週、アナはリスボンに引っ越す。すごーい 학교에서 ok"
	var got []string
	for _, r := range cjkRuns(text) {
		got = append(got, text[r.start:r.end])
	}
	want := []string{"来週", "アナ", "は", "リスボン", "に", "引", "っ", "越", "す", "すごーい", "학교에서"}
	if !slices.Equal(got, want) {
		t.Fatalf("cjkRuns(%q) = %q, want %q", text, got, want)
	}
}

// words splits fts_seg at the separators and fts_words at spaces.
func splitIndexForm(seg, words string) (segWords, extra []string) {
	return strings.Split(seg, wordSep), strings.Fields(words)
}

func TestIndexForm(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		seg        string // "" = the text itself; | marks wordSep
		inWords    []string
	}{
		{"chinese compound and its sub-words", zhSentence,
			"我们|正在|研究|人工智能|在|医疗|领域|的|应用。", []string{"人工", "智能"}},
		{"japanese kanji cut, kana split from kanji", jaSentence,
			"私|は|東京|大学|で|機械|学習|を|研究|しています。", []string{"して", "ます"}},
		{"japanese katakana bigrams", jaKatakana,
			"東京|スカイツリー|の|展望|台|から|富士山|が|見|えました。", []string{"ツリ", "リー", "富士"}},
		{"korean eojeol bigrams and first syllables", koSentence,
			"", []string{"학교", "교에", "에서", "친구", "학", "친"}},
		{"cjk next to latin and digits", "用Python写代码2026年",
			"用|Python|写|代码|2026|年", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seg, words, cjk := indexForm(tc.text)
			if !cjk {
				t.Fatalf("indexForm(%q): no CJK found", tc.text)
			}
			if got := strings.ReplaceAll(seg, wordSep, "|"); got != tc.seg {
				t.Errorf("indexForm(%q) seg = %q, want %q", tc.text, got, tc.seg)
			}
			if seg != "" && strings.ReplaceAll(seg, wordSep, "") != tc.text {
				t.Errorf("seg without separators = %q, want the text %q", strings.ReplaceAll(seg, wordSep, ""), tc.text)
			}
			_, extra := splitIndexForm(seg, words)
			for _, w := range tc.inWords {
				if !slices.Contains(extra, w) {
					t.Errorf("indexForm(%q) words = %q, want %q among them", tc.text, words, w)
				}
			}
		})
	}
}

func TestIndexFormWithoutCJK(t *testing.T) {
	for _, text := range []string{"", "Ana is running to Lisbon", "naïve café ÅÄÖ — 🎉 ΑΒΓ кириллица", "x\xffy"} {
		if seg, words, cjk := indexForm(text); cjk || seg != "" || words != "" {
			t.Errorf("indexForm(%q) = %q, %q, %v; want nothing", text, seg, words, cjk)
		}
		fi := newFTSIndexed(text)
		if fi.seg != nil || fi.words != nil || fi.ver != 0 || fi.body != text {
			t.Errorf("newFTSIndexed(%q) = %+v, want the text as is, version 0", text, fi)
		}
	}
}

// Text without CJK must cost nothing but a scan: no allocation.
func TestIndexFormNoCJKAllocatesNothing(t *testing.T) {
	text := strings.Repeat("Ana moved to Lisbon; naïve café, Grüße. ", 50)
	if n := testing.AllocsPerRun(100, func() { newFTSIndexed(text) }); n != 0 {
		t.Fatalf("newFTSIndexed(latin text) allocates %v times, want 0", n)
	}
}

func TestBuildMatchCJK(t *testing.T) {
	loadedHan(t) // a query cuts Han text with the dictionary once one is loaded or wanted (segment_load.go)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"chinese compound gives its sub-words", "人工智能", `"人工" OR "智能" OR "人工智能"`},
		{"chinese stop words dropped", "我们的人工智能", `"人工" OR "智能" OR "人工智能"`},
		{"only chinese stop words", "的 了 在 是 我们", ""},
		{"only japanese particles", "の に は を が で と も", ""},
		{"only korean particles", "에서 에게 으로", ""},
		{"japanese kanji and katakana", "機械学習のプロジェクト", `"機械" OR "学習" OR "プロジェクト" OR "プロ" OR "ロジ" OR "ジェ" OR "ェク" OR "クト"`},
		{"lone hiragana dropped", "引っ越す", `"引" OR "越"`},
		{"korean eojeol gives bigrams, particle dropped", "학교에서", `"학교에서" OR "학교" OR "교에"`},
		{"korean two syllables", "학교", `"학교"`},
		{"mixed latin and cjk", "用Python写代码", `"用" OR "python" OR "写" OR "代码"`},
		{"english stop words still dropped next to cjk", "the 代码 of Python", `"代码" OR "python"`},
		{"english only stop words and a cjk stop word", "the 的", `"the"`},
		{"latin unchanged", "Ana is running", `"ana" OR "running"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BuildMatch(tc.in); got != tc.want {
				t.Errorf("BuildMatch(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// A long CJK query is cut into words before the term byte limit applies:
// before, a run longer than maxTermBytes was dropped whole.
func TestBuildMatchLongCJKRun(t *testing.T) {
	long := strings.Repeat(zhSentence[:len(zhSentence)-len("。")], 3)
	if len(long) <= maxTermBytes {
		t.Fatalf("test run too short: %d bytes", len(long))
	}
	got := BuildMatch(long)
	if !strings.Contains(got, `"智能"`) {
		t.Fatalf("BuildMatch(long run) = %s, want 智能 among the terms", got)
	}
}

// openSegDB opens an in-memory database with a table shaped like chunks and
// an FTS5 table over it shaped and tokenized like chunks_fts.
func openSegDB(tb testing.TB) *sql.DB {
	tb.Helper()
	registerDriver()
	db, err := sql.Open(driverName, ":memory:")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE chunks(rowid INTEGER PRIMARY KEY, text TEXT NOT NULL, ns TEXT NOT NULL,
		fts_seg TEXT, fts_words TEXT, fts_body TEXT GENERATED ALWAYS AS (coalesce(fts_seg, text)) VIRTUAL, sk TEXT NOT NULL DEFAULT '');
		CREATE VIRTUAL TABLE chunks_fts USING fts5(fts_body, ns, fts_words, sk, content = 'chunks', content_rowid = 'rowid',
		tokenize = 'porter unicode61 remove_diacritics 2')`); err != nil {
		tb.Fatal(err)
	}
	return db
}

// Every term BuildMatch makes of a text finds that text once indexed: the
// query side cuts CJK exactly as the index side does. And every MATCH it
// builds is valid FTS5, wrapped as KeywordSearch wraps it.
func FuzzSegmentRoundTrip(f *testing.F) {
	for _, s := range []string{
		zhSentence, jaSentence, jaKatakana, koSentence, "用Python写代码2026年", "人工智能", "すごーい！", "ｱｲｳｴｵ",
		"안나는 다음 주에 리스본으로 이사할 예정입니다.", "我們正在研究人工智慧在醫療領域的應用", "混合 text 和 English words",
		"\u200b人工\u200b智能", "a\xff人工", "東京\u0301大学", "〇〇七", "ｶﾞｷﾞ", "AND OR NOT 人工 NEAR(智能)", `"人工"智能*`,
		"\u05fdｵ", "䃪ーの展⯂", // code points unassigned in Unicode 6.1: token characters for unicode61
	} {
		f.Add(s)
	}
	hanForIndex() // load the dictionary outside the fuzz deadline
	db := openSegDB(f)
	ins, err := db.Prepare(`INSERT INTO chunks(rowid, text, ns, fts_seg, fts_words) VALUES (1, ?, 'n610', ?, ?)`)
	if err != nil {
		f.Fatal(err)
	}
	ftsIns, err := db.Prepare(sqlFTSInsert)
	if err != nil {
		f.Fatal(err)
	}
	count, err := db.Prepare(`SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?`)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		if _, err := db.Exec(`DELETE FROM chunks; INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')`); err != nil {
			t.Fatal(err)
		}
		fi := newFTSIndexed(text)
		if _, err := ins.Exec(text, fi.seg, fi.words); err != nil {
			t.Fatal(err)
		}
		if _, err := ftsIns.Exec(1, fi.body, "n610", fi.words, "k0"); err != nil {
			t.Fatal(err)
		}
		if s, ok := fi.seg.(string); ok && !strings.Contains(text, wordSep) && strings.ReplaceAll(s, wordSep, "") != text {
			t.Fatalf("fts_seg of %q is %q: not the text with separators", text, s)
		}
		m := BuildMatch(text)
		if m == "" {
			return
		}
		var n int
		if err := count.QueryRow(`ns : "n610" AND ` + ftsColumns + ` : (` + m + `)`).Scan(&n); err != nil {
			t.Fatalf("BuildMatch(%q) = %s: MATCH error: %v", text, m, err)
		}
		for _, term := range matchTerms(text) {
			if !cjkOnly(term) {
				continue // Latin terms are unicode61's, as before
			}
			if err := count.QueryRow(ftsColumns + ` : ` + quoteTerm(term)).Scan(&n); err != nil {
				t.Fatalf("term %q: %v", term, err)
			}
			if n != 1 {
				t.Fatalf("term %q of %q does not find the text indexed as %q + %q", term, text, fi.body, fi.words)
			}
		}
	})
}

// cjkOnly reports whether every rune of s is of a CJK class and in the
// Basic Multilingual Plane (SQLite's unicode61 tables predate some of the
// supplementary ideographs and split words there, on both sides alike).
func cjkOnly(s string) bool {
	for _, r := range s {
		if classOf(r) == classOther || r > 0xFFFF {
			return false
		}
	}
	return s != ""
}

func TestCJKSnippet(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		terms      []string
		want       string
	}{
		{"sub-word inside a compound", zhSentence, []string{"智能"}, "我们正在研究人工«智能»在医疗领域的应用。"},
		{"korean bigram inside an eojeol", koSentence, []string{"학교"}, "저는 어제 «학교»에서 친구를 만났어요."},
		{"overlapping terms: the longest wins", "人工智能", []string{"人工", "智能", "人工智能"}, "«人工智能»"},
		{"latin term marks the word start", "Ana is Running 到上海", []string{"run", "上海"}, "Ana is «Run»ning 到«上海»"},
		{"latin term inside a word is not marked", "brunch 在上海", []string{"run", "上海"}, "brunch 在«上海»"},
		{"latin term right after cjk", "用Python写", []string{"python"}, "用«Python»写"},
		{"no term", zhSentence, []string{"东京"}, ""},
		{"window cut on both sides: 10 characters before, 40 in all", strings.Repeat("一二三四五六七八九十", 5) + "人工智能" + strings.Repeat("一二三四五六七八九十", 5),
			[]string{"智能"}, "…三四五六七八九十人工«智能»一二三四五六七八九十一二三四五六七八九十一二三四五六七八…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cjkSnippet(tc.text, tc.terms); got != tc.want {
				t.Errorf("cjkSnippet(%q, %q) = %q, want %q", tc.text, tc.terms, got, tc.want)
			}
		})
	}
}

// The shared segmenter is used by Apply and by searches at once: it must be
// safe for concurrent use (run with -race).
func TestSegmenterConcurrentUse(t *testing.T) {
	texts := []string{zhSentence, jaSentence, jaKatakana, koSentence, "用Python写代码", "中华人民共和国成立于1949年。"}
	want := make([]string, len(texts))
	for i, s := range texts {
		seg, words, _ := indexForm(s)
		want[i] = seg + "/" + words + "/" + BuildMatch(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(texts))
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, s := range texts {
				seg, words, _ := indexForm(s)
				if got := seg + "/" + words + "/" + BuildMatch(s); got != want[i] {
					errs <- fmt.Sprintf("concurrent indexForm+BuildMatch(%q) = %q, want %q", s, got, want[i])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestHasCJKAgreesWithRuneByRune compares hasCJK, which skips ASCII eight
// bytes at a time, with a scan of every rune, on strings that put CJK,
// Latin-1, curly quotes, emoji and invalid bytes at every offset.
func TestHasCJKAgreesWithRuneByRune(t *testing.T) {
	slow := func(s string) bool {
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			if size > 1 && classOf(r) != classOther {
				return true
			}
			i += size
		}
		return false
	}
	pieces := []string{"a", "the quick ", "é", "’", "🙂", "\xff", "\xe1", "中", "カ", "한", "ー", " ", "0123456789abcdef"}
	r := rand.New(rand.NewPCG(7, 8))
	for n := range 20000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := hasCJK(s), slow(s); got != want {
			t.Fatalf("case %d: hasCJK(%q) = %v, want %v", n, s, got, want)
		}
	}
}
