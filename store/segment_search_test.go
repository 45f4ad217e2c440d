package store

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// Chunks in several languages; each CJK one holds words that appear only
// inside a longer run of its script, which unicode61 alone keeps as one
// token and so could never match.
var cjkChunks = []Chunk{
	{ID: "zh", Text: zhSentence},
	// "Ana moves to Shanghai next week; she found a new job at an AI company."
	{ID: "zh2", Text: "安娜下周要搬到上海，她在一家人工智能公司找到了新工作。"},
	{ID: "ja", Text: jaSentence},
	{ID: "ja2", Text: jaKatakana},
	{ID: "ko", Text: koSentence},
	// "Yesterday I borrowed a book at the library."
	{ID: "ko2", Text: "어제 도서관에서 책을 빌렸어요."},
	// "I wrote a machine learning model in Python."
	{ID: "mixed", Text: "我用Python写了一个机器学习模型。"},
	{ID: "en", Text: "Ana was running to the station to catch the train to Lisbon"},
	// "His book" — shares only a stop word (的) with the queries below.
	{ID: "stop", Text: "他的书"},
}

// cjkShard opens a shard holding cjkChunks in namespace "n".
func cjkShard(t *testing.T) *Shard {
	t.Helper()
	s := openTest(t, testDims)
	mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{{Session: SessionRef{"n", "k", "s"}, Chunks: cjkChunks}}})
	return s
}

// hitIDs runs a keyword search and returns the ids found, sorted.
func hitIDs(t *testing.T, s *Shard, q string) []string {
	t.Helper()
	got, err := s.KeywordSearch(context.Background(), "n", q, Filter{}, 20)
	if err != nil {
		t.Fatalf("KeywordSearch(%q): %v", q, err)
	}
	var ids []string
	for _, c := range got {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestCJKKeywordSearchFindsWordsInsideRuns(t *testing.T) {
	s := cjkShard(t)
	for _, tc := range []struct {
		name, q string
		want    []string
	}{
		{"chinese sub-word of a compound", "智能", []string{"zh", "zh2"}},
		{"chinese compound", "人工智能", []string{"zh", "zh2"}},
		{"chinese word inside a run", "医疗", []string{"zh"}},
		{"chinese word next to latin", "模型", []string{"mixed"}},
		{"japanese kanji compound part", "学習", []string{"ja"}},
		{"japanese sub-word", "富士", []string{"ja2"}},
		{"japanese katakana inside a longer loanword", "ツリー", []string{"ja2"}},
		{"japanese word before a particle", "東京", []string{"ja", "ja2"}},
		{"korean noun before a particle", "학교", []string{"ko"}},
		{"korean noun before another particle", "친구", []string{"ko"}},
		{"korean three syllables before a particle", "도서관", []string{"ko2"}},
		{"korean one-syllable noun before a particle", "책", []string{"ko2"}},
		{"korean eojeol with another particle", "학교에", []string{"ko"}},
		{"latin next to cjk", "python", []string{"mixed"}},
		{"latin and cjk", "Python 学习", []string{"mixed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := slices.Sorted(slices.Values(tc.want))
			if got := hitIDs(t, s, tc.q); !slices.Equal(got, want) {
				t.Errorf("KeywordSearch(%q) = %v, want %v (match %s)", tc.q, got, want, BuildMatch(tc.q))
			}
		})
	}
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func TestCJKStopWordsDropped(t *testing.T) {
	s := cjkShard(t)
	ctx := context.Background()
	// Only stop words: no term, so no result and no error.
	for _, q := range []string{"的", "我们的", "の は を", "에서", "的 の 에서"} {
		got, err := s.KeywordSearch(ctx, "n", q, Filter{}, 10)
		if err != nil || len(got) != 0 {
			t.Errorf("KeywordSearch(%q) = %v, %v; want no result and no error", q, got, err)
		}
	}
	// A stop word does not match a chunk that shares only it.
	if got := hitIDs(t, s, "我的智能"); !slices.Equal(got, []string{"zh", "zh2"}) {
		t.Errorf("KeywordSearch(我的智能) = %v, want [zh zh2] (not the chunk sharing only 的)", got)
	}
	if got := hitIDs(t, s, "书"); !slices.Equal(got, []string{"stop"}) {
		t.Errorf("KeywordSearch(书) = %v, want [stop]", got)
	}
}

func TestLatinKeywordSearchStillStems(t *testing.T) {
	s := cjkShard(t)
	for _, q := range []string{"run", "runs", "Running", "trains"} {
		if got := hitIDs(t, s, q); !slices.Equal(got, []string{"en"}) {
			t.Errorf("KeywordSearch(%q) = %v, want [en]", q, got)
		}
	}
}

func TestCJKSnippetsShowTheOriginalText(t *testing.T) {
	s := cjkShard(t)
	ctx := context.Background()
	for _, tc := range []struct{ q, id, want string }{
		{"智能", "zh", "我们正在研究人工«智能»在医疗领域的应用。"},
		{"학교", "ko", "저는 어제 «학교»에서 친구를 만났어요."},
		{"ツリー", "ja2", "東京スカイ«ツリー»の展望台から富士山が見えました。"},
		// No CJK term: FTS5's snippet, its word separators removed.
		{"python", "mixed", "我用«Python»写了一个机器学习模型。"},
	} {
		got, err := s.KeywordSearch(ctx, "n", tc.q, Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(got, func(c Candidate) bool { return c.ID == tc.id })
		if i < 0 {
			t.Fatalf("KeywordSearch(%q) = %v, want %s among the hits", tc.q, got, tc.id)
		}
		sn := snippetOf(t, s, got[i])
		if sn != tc.want {
			t.Errorf("KeywordSearch(%q) snippet of %s = %q, want %q", tc.q, tc.id, sn, tc.want)
		}
		if strings.Contains(sn, wordSep) {
			t.Errorf("snippet %q holds a word separator", sn)
		}
	}
	// Hydration returns the text as written.
	recs, err := s.ChunksByID(ctx, []string{"zh"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs["zh"].Text != zhSentence {
		t.Fatalf("Chunks(zh) = %+v, want the original text", recs)
	}
}

// Deleting and replacing CJK chunks removes their FTS rows with the values
// they were indexed with: the index stays consistent and finds nothing stale.
func TestCJKChunksDeletedAndReplaced(t *testing.T) {
	s := cjkShard(t)
	ctx := context.Background()
	ref := SessionRef{"n", "k", "s"}
	// Rechunk from the start: every chunk but "en" is replaced by a new one.
	mustApply(t, s, Batch{Seq: 2, Rechunk: []SessionChunks{{Session: ref, Chunks: []Chunk{
		{ID: "en", Text: cjkChunks[7].Text},
		{ID: "zh-new", Text: "明天我们讨论深度学习。"}, // "Tomorrow we discuss deep learning."
	}}}})
	mustApply(t, s, Batch{Seq: 3, Files: []FileUpsert{{Namespace: "n", Path: "notes.md", Hash: "h1",
		Content: "# 笔记\n\n自然语言处理很有意思。", Chunks: []Chunk{{ID: "f1", Text: "自然语言处理很有意思。"}}}}})
	mustApply(t, s, Batch{Seq: 4, Files: []FileUpsert{{Namespace: "n", Path: "notes.md", Hash: "h2",
		Content: "# 笔记\n\n计算机视觉也很有意思。", Chunks: []Chunk{{ID: "f2", Text: "计算机视觉也很有意思。"}}}}})
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check after replacing CJK chunks: %v", err)
	}
	for q, want := range map[string][]string{
		"智能": nil, "학교": nil, "学习": {"zh-new"}, "语言": nil, "视觉": {"f2"}, "意思": {"f2"}, "run": {"en"},
	} {
		if got := hitIDs(t, s, q); !slices.Equal(got, want) {
			t.Errorf("KeywordSearch(%q) = %v, want %v", q, got, want)
		}
	}
	mustApply(t, s, Batch{Seq: 5, DeleteSessions: []SessionRef{ref}, DeleteFiles: []FileRef{{Namespace: "n", Path: "notes.md"}}})
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check after deleting CJK chunks: %v", err)
	}
	if got := hitIDs(t, s, "视觉 学习 run"); len(got) != 0 {
		t.Errorf("KeywordSearch after delete = %v, want none", got)
	}
	if c := counts(t, s, "n"); c.chunks != 0 || c.fts != 0 {
		t.Errorf("after delete: %+v, want no chunk and no FTS row", c)
	}
}
