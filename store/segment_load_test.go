package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-ego/gse"
)

// loadedHan returns the process's dictionary, loading it if needed.
func loadedHan(tb testing.TB) *hanDict {
	tb.Helper()
	d, err := loadHanDict(context.Background())
	if err != nil {
		tb.Fatalf("loadHanDict: %v", err)
	}
	return d
}

// unloadHan makes the process look freshly started for the test: no
// dictionary, no shard wanting it, no Han text indexed. The loaded
// dictionary comes back afterwards, so other tests do not load it again.
func unloadHan(t *testing.T) {
	t.Helper()
	d := loadedHan(t)
	ingested := han.ingested.Load()
	if n := han.wanted.Load(); n != 0 {
		t.Fatalf("%d open shards want the dictionary before the test", n)
	}
	han.dict.Store(nil)
	han.ingested.Store(false)
	t.Cleanup(func() {
		han.pieceHook = nil
		han.dict.Store(d)
		han.ingested.Store(ingested)
	})
}

// reopen opens the shard file at path, closed at the end of the test.
func reopen(t *testing.T, path string) *Shard {
	t.Helper()
	s, err := Open(context.Background(), path, Config{Dims: testDims})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil && !isClosed(err) {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// shardFile writes chunks to a new shard file in namespace "n" and returns
// its path, closed.
func shardFile(t *testing.T, chunks []Chunk) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shard.db")
	s, err := Open(context.Background(), path, Config{Dims: testDims})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{{Session: SessionRef{"n", "k", "s"}, Chunks: chunks}}})
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return path
}

// searchAll runs each query as a keyword search and returns the answers,
// one line per query: ids, scores and snippets in rank order.
func searchAll(t *testing.T, s *Shard, queries []string) []string {
	t.Helper()
	var out []string
	for _, q := range queries {
		got, err := s.KeywordSearch(context.Background(), "n", q, Filter{}, 20)
		if err != nil {
			t.Fatalf("KeywordSearch(%q): %v", q, err)
		}
		line := q + ":"
		for _, c := range got {
			line += fmt.Sprintf(" %s/%.6f/%s", c.ID, c.Score, snippetOf(t, s, c))
		}
		out = append(out, line)
	}
	return out
}

var hanQueries = []string{"人工智能", "智能", "医疗领域的应用", "机器学习", "上海 Python", "東京大学", "Lisbon 人工智能", "他的"}

func TestShardWithoutHanNeverLoadsDictionary(t *testing.T) {
	var chunks []Chunk
	for _, c := range cjkChunks {
		if !hasHan(c.Text) {
			chunks = append(chunks, c) // Korean, English
		}
	}
	chunks = append(chunks, Chunk{ID: "kana", Text: "すごーい、スカイツリーがみえる"})
	unloadHan(t)
	loads := han.loads.Load()
	path := shardFile(t, chunks)
	s := reopen(t, path)
	if s.han != nil {
		t.Fatal("Open started a dictionary load for a shard without Han text")
	}
	queries := append(slices.Clone(hanQueries), "학교 人工", "スカイツリー 智能")
	cold := searchAll(t, s, queries)
	if han.dict.Load() != nil || han.loads.Load() != loads {
		t.Fatalf("Han queries on a shard without Han text loaded the dictionary (%d loads)", han.loads.Load()-loads)
	}
	loadedHan(t)
	if warm := searchAll(t, s, queries); !slices.Equal(cold, warm) {
		t.Fatalf("answers without the dictionary\n%s\nwant those with it\n%s", strings.Join(cold, "\n"), strings.Join(warm, "\n"))
	}
}

func TestShardWithHanLoadsDictionaryAtOpen(t *testing.T) {
	path := shardFile(t, cjkChunks)
	w := reopen(t, path)
	warm := searchAll(t, w, hanQueries)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	unloadHan(t)
	loads := han.loads.Load()
	s := reopen(t, path)
	if s.han == nil {
		t.Fatal("Open started no dictionary load for a shard with Han text")
	}
	// Right after Open: the search waits for the load under way.
	if cold := searchAll(t, s, hanQueries); !slices.Equal(cold, warm) {
		t.Fatalf("first searches after Open\n%s\nwant the warm answers\n%s", strings.Join(cold, "\n"), strings.Join(warm, "\n"))
	}
	if err := s.WaitSegmenter(context.Background()); err != nil {
		t.Fatalf("WaitSegmenter: %v", err)
	}
	if n := han.loads.Load() - loads; n != 1 {
		t.Fatalf("%d dictionary loads, want 1", n)
	}
}

func TestCloseWhileDictionaryLoads(t *testing.T) {
	path := shardFile(t, cjkChunks)
	unloadHan(t)
	started := make(chan struct{})
	var once sync.Once
	han.pieceHook = func(ctx context.Context) { // hold the load until cancelled
		once.Do(func() { close(started) })
		<-ctx.Done()
	}
	s, err := Open(context.Background(), path, Config{Dims: testDims})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the dictionary load did not start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close while loading: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		buf := make([]byte, 1<<20)
		if !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "startHanLoad") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the loading goroutine is still running after Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if han.dict.Load() != nil || han.wanted.Load() != 0 {
		t.Fatalf("after a cancelled load: dictionary %v, %d shards want it; want none", han.dict.Load() != nil, han.wanted.Load())
	}
	han.pieceHook = nil
	if _, err := loadHanDict(ctx); err != nil { // the next load starts over
		t.Fatalf("load after a cancelled one: %v", err)
	}
}

// TestHanDictMatchesGse checks that hanDict answers as gse's own segmenter
// loaded with LoadDictEmbed("zh_s"), which the index was built with: the
// same lookups for every dictionary word and its prefixes, and the same
// cuts of sentences and of random strings of dictionary words and
// characters.
func TestHanDictMatchesGse(t *testing.T) {
	d := loadedHan(t)
	// NotLoadHMM: the HMM model is gse/hmm's global, loaded by loadHanDict;
	// reloading it would race with other tests' cuts.
	seg := &gse.Segmenter{SkipLog: true, NotLoadHMM: true}
	if err := seg.LoadDictEmbed("zh_s"); err != nil {
		t.Fatal(err)
	}
	if got, want := d.logTotal, math.Log(seg.Dict.TotalFreq()); got != want {
		t.Fatalf("log total frequency %v, want %v", got, want)
	}
	words := 0
	for _, f := range d.words {
		if f > 0 {
			words++
		}
	}
	if words != seg.Dict.NumTokens() {
		t.Fatalf("%d words, gse has %d", words, seg.Dict.NumTokens())
	}
	var keys []string
	for i := range seg.Dict.Tokens {
		tok := &seg.Dict.Tokens[i]
		key := tok.Text()
		keys = append(keys, key)
		for j := 0; j < len(key); {
			_, size := utf8.DecodeRuneInString(key[j:])
			j += size
			f, ok := d.find(key[:j])
			gf, _, gok := seg.Find(key[:j])
			if f != gf || ok != gok {
				t.Fatalf("find(%q) = %v, %v; gse %v, %v", key[:j], f, ok, gf, gok)
			}
		}
	}
	texts := slices.Clone(zhBenchSentences)
	texts = append(texts, zhSentence, jaSentence, "中华人民共和国成立于1949年", "我們正在研究人工智慧在醫療領域的應用", "北京烤鸭巧克力计算机")
	r := rand.New(rand.NewPCG(7, 13))
	chars := []rune(strings.Join(zhBenchSentences, ""))
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := 1 + r.IntN(8); n > 0; n-- {
			if r.IntN(3) == 0 {
				b.WriteRune(chars[r.IntN(len(chars))])
			} else {
				b.WriteString(keys[r.IntN(len(keys))])
			}
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		for _, run := range cjkRuns(s) {
			if run.class != classHan {
				continue
			}
			h := s[run.start:run.end]
			if got, want := d.cut(h), seg.Cut(h, true); !slices.Equal(got, want) {
				t.Fatalf("cut(%q) = %q, gse %q", h, got, want)
			}
		}
	}
}

// A Chinese search while the dictionary is still loading waits for it only
// within its own deadline: it fails with the context's error instead of
// hanging, and a search after the load answers.
func TestChineseSearchWaitsForTheDictionaryWithinItsDeadline(t *testing.T) {
	path := shardFile(t, cjkChunks)
	unloadHan(t)
	release := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	han.pieceHook = func(ctx context.Context) { // hold the background load
		once.Do(func() { close(started) })
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	s := reopen(t, path)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the dictionary load did not start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := s.KeywordSearch(ctx, "ns", "人工智能", Filter{}, 10)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("KeywordSearch while the dictionary loads = %v, want the deadline's error", err)
	}
	close(release)
	if err := s.WaitSegmenter(context.Background()); err != nil {
		t.Fatal(err)
	}
	han.pieceHook = nil
	if _, err := s.KeywordSearch(context.Background(), "ns", "人工智能", Filter{}, 10); err != nil {
		t.Fatalf("KeywordSearch after the load: %v", err)
	}
}
