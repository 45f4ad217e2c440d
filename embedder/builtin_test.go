package embedder

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func newTestBuiltin(tb testing.TB, dims int) *Builtin {
	tb.Helper()
	b, err := NewBuiltin(BuiltinConfig{Dims: dims})
	if err != nil {
		tb.Fatalf("NewBuiltin(%d): %v", dims, err)
	}
	return b
}

func embedAll(tb testing.TB, e Embedder, texts ...string) [][]float32 {
	tb.Helper()
	vecs, err := e.Embed(context.Background(), Request{Texts: texts, Kind: KindDocument})
	if err != nil {
		tb.Fatalf("Embed(%d texts): %v", len(texts), err)
	}
	if len(vecs) != len(texts) {
		tb.Fatalf("Embed(%d texts) returned %d vectors", len(texts), len(vecs))
	}
	return vecs
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func vecHash(v []float32) string {
	h := sha256.New()
	var b [4]byte
	for _, x := range v {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestBuiltinConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		dims int
		ok   bool
	}{
		{"zero means default", 0, true},
		{"minimum", 16, true},
		{"default", 384, true},
		{"maximum", 4096, true},
		{"too small", 15, false},
		{"negative", -1, false},
		{"too large", 4097, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := BuiltinConfig{Dims: tt.dims}.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate(Dims=%d)=%v, want ok=%v", tt.dims, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate(Dims=%d)=%v, want it to wrap ErrInvalidConfig", tt.dims, err)
			}
			if _, err := NewBuiltin(BuiltinConfig{Dims: tt.dims}); (err == nil) != tt.ok {
				t.Fatalf("NewBuiltin(Dims=%d)=%v, want ok=%v", tt.dims, err, tt.ok)
			}
		})
	}
}

func TestBuiltinInfo(t *testing.T) {
	tests := []struct {
		name string
		dims int
		want Info
	}{
		{"default", 0, Info{Provider: "builtin", Model: "hash-ngram-v1", Dims: 384}},
		{"explicit", 64, Info{Provider: "builtin", Model: "hash-ngram-v1", Dims: 64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := newTestBuiltin(t, tt.dims).Info(); got != tt.want {
				t.Fatalf("Info()=%+v, want %+v", got, tt.want)
			}
		})
	}
}

// builtinTexts covers the tokenizer's paths: ASCII, accents, CJK, marks,
// symbols only, invalid UTF-8, long words and repetition.
var builtinTexts = []struct {
	name, text string
}{
	{"english", "The cat moved to Berlin in 2023; she likes the U-Bahn."},
	{"empty", ""},
	{"punctuation only", "?! -- ... ;;"},
	{"accents", "Café crème brûlée à Zürich, naïve Ærøskøbing"},
	{"cjk", "我喜欢在柏林吃拉面。東京の猫はかわいいです"},
	{"hangul and cyrillic", "안녕하세요 세계 привет мир"},
	{"combining marks", "cafe\u0301 नमस्ते दुनिया"},
	{"emoji", "deploy 🚀 done ✅"},
	{"invalid utf8", "bad \xff\xfe bytes \xc3"},
	{"long word", strings.Repeat("abcdefghij", 20) + " " + strings.Repeat("ü", 80)},
	{"repetition", strings.Repeat("memory index memory ", 50)},
	{"code", "func (b *Builtin) Embed(ctx context.Context, req Request) ([][]float32, error)"},
}

func TestBuiltinDeterministic(t *testing.T) {
	b1, b2 := newTestBuiltin(t, 0), newTestBuiltin(t, 0)
	texts := make([]string, len(builtinTexts))
	for i, c := range builtinTexts {
		texts[i] = c.text
	}
	first := embedAll(t, b1, texts...)
	other := embedAll(t, b2, texts...)
	// Embedding again through the same, now warm, scratch, in another order,
	// must not leak state from one text into the next.
	reversed := make([]string, len(texts))
	for i := range texts {
		reversed[len(texts)-1-i] = texts[i]
	}
	again := embedAll(t, b1, reversed...)
	for i, c := range builtinTexts {
		t.Run(c.name, func(t *testing.T) {
			want := vecHash(first[i])
			if got := vecHash(other[i]); got != want {
				t.Fatalf("second instance: hash %s, want %s", got, want)
			}
			if got := vecHash(again[len(texts)-1-i]); got != want {
				t.Fatalf("second call: hash %s, want %s", got, want)
			}
		})
	}
}

// TestBuiltinGolden pins hash-ngram-v1: vectors are stored and compared
// across processes and versions, so any change to them must come with a new
// model name. Run with -update after such a change.
func TestBuiltinGolden(t *testing.T) {
	path := filepath.Join("testdata", "builtin_golden.txt")
	var got strings.Builder
	fmt.Fprintln(&got, "# sha256 of the little-endian float32 bytes of hash-ngram-v1 vectors; go test ./embedder -run TestBuiltinGolden -update rewrites it")
	for _, dims := range []int{384, 64} {
		b := newTestBuiltin(t, dims)
		for _, c := range builtinTexts {
			v := embedAll(t, b, c.text)[0]
			fmt.Fprintf(&got, "%s\tdims=%d\t%s\n", vecHash(v), dims, c.name)
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if got.String() != string(want) {
		gotLines := strings.Split(got.String(), "\n")
		sc := bufio.NewScanner(strings.NewReader(string(want)))
		for i := 0; sc.Scan(); i++ {
			if i >= len(gotLines) || gotLines[i] != sc.Text() {
				g := ""
				if i < len(gotLines) {
					g = gotLines[i]
				}
				t.Fatalf("%s line %d: got %q, want %q", path, i+1, g, sc.Text())
			}
		}
		t.Fatalf("%s: got %d lines, want fewer", path, len(gotLines))
	}
}

func TestBuiltinUnitNorm(t *testing.T) {
	b := newTestBuiltin(t, 0)
	for _, c := range builtinTexts {
		t.Run(c.name, func(t *testing.T) {
			v := embedAll(t, b, c.text)
			if err := CheckVectors(v, 1, 384); err != nil {
				t.Fatalf("CheckVectors: %v", err)
			}
			if got := norm(v[0]); math.Abs(got-1) > 1e-5 {
				t.Fatalf("norm=%v, want 1", got)
			}
		})
	}
}

func TestBuiltinEmptyTexts(t *testing.T) {
	b := newTestBuiltin(t, 0)
	vecs := embedAll(t, b, "", "  ?! ", "cat")
	if got := cosine(vecs[0], vecs[1]); math.Abs(got-1) > 1e-6 {
		t.Fatalf("cosine(empty, punctuation)=%v, want 1: featureless texts share one vector", got)
	}
	if got := cosine(vecs[0], vecs[2]); math.Abs(got) > 0.3 {
		t.Fatalf("cosine(empty, cat)=%v, want about 0", got)
	}
}

func TestBuiltinSimilarity(t *testing.T) {
	tests := []struct {
		name            string
		anchor, near    string
		far             string
		minGap, minNear float64
	}{
		{"shared words and morphology",
			"the cat moved to Berlin", "moving to berlin with my cat",
			"quarterly revenue grew faster than expected", 0.4, 0.5},
		{"typo",
			"kubernetes deployment failed", "kubernets deploymnet failed",
			"the weather in spring is mild", 0.3, 0.35},
		{"inflection",
			"running the migrations", "the migration runs",
			"apples and oranges", 0.2, 0.2},
		{"case and accents",
			"CAFÉ in Zürich", "café in zürich",
			"database connection pool", 0.5, 0.9},
		{"accents dropped",
			"café résumé naïve", "cafe resume naive",
			"database connection pool", 0.3, 0.3},
		{"cjk",
			"我喜欢在柏林吃拉面", "柏林的拉面很好吃",
			"東京の天気は晴れです", 0.15, 0.25},
		{"stop words count little",
			"the cat sat on the mat", "a cat sat on a mat",
			"the of and to in it is", 0.3, 0.6},
	}
	b := newTestBuiltin(t, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := embedAll(t, b, tt.anchor, tt.near, tt.far)
			near, far := cosine(v[0], v[1]), cosine(v[0], v[2])
			t.Logf("near=%.3f far=%.3f", near, far)
			if near < tt.minNear {
				t.Errorf("cosine(%q, %q)=%.3f, want >= %.2f", tt.anchor, tt.near, near, tt.minNear)
			}
			if near-far < tt.minGap {
				t.Errorf("near %.3f - far %.3f = %.3f, want >= %.2f", near, far, near-far, tt.minGap)
			}
		})
	}
}

func TestBuiltinDims(t *testing.T) {
	for _, dims := range []int{16, 100, 384, 1536, 4096} {
		t.Run(fmt.Sprintf("dims=%d", dims), func(t *testing.T) {
			b := newTestBuiltin(t, dims)
			vecs := embedAll(t, b, "a short text", "", benchText(400))
			if err := CheckVectors(vecs, 3, dims); err != nil {
				t.Fatalf("CheckVectors: %v", err)
			}
			if got := b.Info().Dims; got != dims {
				t.Fatalf("Info().Dims=%d, want %d", got, dims)
			}
		})
	}
}

func TestBuiltinConcurrent(t *testing.T) {
	b := newTestBuiltin(t, 0)
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = benchTextSeed(10+i*7, uint64(i))
	}
	want := embedAll(t, b, texts...)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for round := range 20 {
				i := (g*31 + round*7) % len(texts)
				got, err := b.Embed(context.Background(), Request{Texts: texts[i : i+1]})
				if err != nil {
					errs <- err
					return
				}
				if vecHash(got[0]) != vecHash(want[i]) {
					errs <- fmt.Errorf("goroutine %d round %d: text %d differs from the sequential vector", g, round, i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestBuiltinContextDone(t *testing.T) {
	b := newTestBuiltin(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Embed(ctx, Request{Texts: []string{"x"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Embed(cancelled ctx)=%v, want context.Canceled", err)
	}
	got, err := b.Embed(context.Background(), Request{})
	if err != nil || len(got) != 0 {
		t.Fatalf("Embed(no texts)=%d vectors, %v; want 0, nil", len(got), err)
	}
}

func FuzzBuiltin(f *testing.F) {
	for _, c := range builtinTexts {
		f.Add(c.text)
	}
	b := newTestBuiltin(f, 32)
	f.Fuzz(func(t *testing.T, text string) {
		v := embedAll(t, b, text, text)
		if err := CheckVectors(v, 2, 32); err != nil {
			t.Fatalf("CheckVectors: %v", err)
		}
		if got := norm(v[0]); math.Abs(got-1) > 1e-5 {
			t.Fatalf("norm=%v, want 1", got)
		}
		if vecHash(v[0]) != vecHash(v[1]) {
			t.Fatalf("the same text gave two vectors")
		}
	})
}

// benchVocab is a vocabulary for synthetic texts: the stop words first, as
// the most frequent, then generated words of two to four syllables.
var benchVocab = func() []string {
	words := strings.Fields(stopWords)
	syl := strings.Fields("ka ri mon tel an so ve lin dra pe gor u mi ston ber al ex in qua tion")
	r := rand.New(rand.NewPCG(7, 7))
	for len(words) < 5000 {
		var w strings.Builder
		for range 2 + r.IntN(3) {
			w.WriteString(syl[r.IntN(len(syl))])
		}
		words = append(words, w.String())
	}
	return words
}()

// benchText returns a deterministic text of tokens words drawn from
// benchVocab with Zipf's law, as in prose: about half the words of a
// 400-word text are distinct.
func benchText(tokens int) string { return benchTextSeed(tokens, 1) }

func benchTextSeed(tokens int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 42))
	z := rand.NewZipf(r, 1.07, 2, uint64(len(benchVocab)-1))
	var sb strings.Builder
	for i := range tokens {
		if i > 0 {
			if r.IntN(12) == 0 {
				sb.WriteString(". ")
			} else {
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(benchVocab[z.Uint64()])
	}
	return sb.String()
}

// benchmarkEmbed measures one Embed call of texts on e per iteration.
func benchmarkEmbed(b *testing.B, e Embedder, texts []string) {
	b.Helper()
	ctx := context.Background()
	req := Request{Texts: texts, Kind: KindDocument}
	var bytes int64
	for _, t := range texts {
		bytes += int64(len(t))
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuiltin(b *testing.B) {
	e := newTestBuiltin(b, 0)
	for _, tokens := range []int{50, 400, 2000} {
		b.Run(fmt.Sprintf("tokens=%d", tokens), func(b *testing.B) {
			benchmarkEmbed(b, e, []string{benchText(tokens)})
		})
	}
}

func TestBuiltinStopWords(t *testing.T) {
	tests := []struct {
		word string
		stop bool
	}{
		{"the", true},
		{"The", true},
		{"because", true},
		{"yourselves", true}, // longer than one 8-byte chunk
		{"cat", false},
		{"berlin", false},
		{"thee", false},
		{"ourselvesx", false},
	}
	var s builtinScratch
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			s.tokenize(tt.word)
			s.count()
			if len(s.distinct) != 1 {
				t.Fatalf("tokenize(%q) gave %d words, want 1", tt.word, len(s.distinct))
			}
			got := s.words[s.distinct[0].slot].meta&stopBit != 0
			if got != tt.stop {
				t.Fatalf("stop(%q)=%v, want %v", tt.word, got, tt.stop)
			}
		})
	}
}

func TestBuiltinTokenize(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"ascii", "Hello, World-42!", []string{"hello", "world", "42"}},
		{"accents folded", "Zürich Straße ŁÓDŹ", []string{"zurich", "strasse", "lodz"}},
		{"combining accent dropped", "cafe\u0301", []string{"cafe"}},
		{"cjk characters", "東京abc猫", []string{"東", "京", "abc", "猫"}},
		{"cyrillic lower-cased", "Привет Мир", []string{"привет", "мир"}},
		{"devanagari marks kept", "नमस्ते", []string{"नमस्ते"}},
		{"invalid utf8 separates", "ab\xffcd", []string{"ab", "cd"}},
		{"symbols only", "?! 🚀 -- ×", nil},
	}
	var s builtinScratch
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.tokenize(tt.text)
			var got []string
			for _, tok := range s.toks {
				if s.buf[tok.start-1] != '<' || s.buf[tok.end] != '>' {
					t.Fatalf("token %q not bounded by markers", s.buf[tok.start:tok.end])
				}
				got = append(got, string(s.buf[tok.start:tok.end]))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("tokenize(%q)=%q, want %q", tt.text, got, tt.want)
			}
		})
	}
}
