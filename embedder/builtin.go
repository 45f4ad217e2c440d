package embedder

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"
)

// Identity of the built-in embedder's vector space. Changing how features are
// extracted, hashed or weighted changes the vectors, so it must come with a
// new model name (and an updated testdata/builtin_golden.txt).
const (
	builtinProvider = "builtin"
	builtinModel    = "hash-ngram-v1"

	defaultBuiltinDims = 384
	minBuiltinDims     = 16
	maxBuiltinDims     = 4096
)

// Feature weights, before sub-linear TF and the stop-word factor. A word's
// character n-grams share one budget (wGram, spread as 1/sqrt(count) over
// them), so a long word does not outweigh a short one.
const (
	wWord     = 1.0  // a word unigram; a CJK character is a word
	wPair     = 0.5  // two adjacent words
	wCJKPair  = 1.0  // two adjacent CJK characters: often the real word
	wGram     = 0.8  // norm of all character n-grams of one word
	wStop     = 0.25 // factor for stop words and the n-grams and pairs they are in
	maxGramed = 32   // character n-grams come from the first 32 runes of "<word>"
)

// Feature tags keep the feature kinds apart: "cat" as a word and "cat" as an
// n-gram of "<cats>" hash differently.
const (
	tagWord  = 1
	tagGram  = 2
	tagPair  = 3
	tagEmpty = 4
)

// BuiltinConfig configures the built-in embedder.
type BuiltinConfig struct {
	// Dims is the vector length. 0 means 384; otherwise it must be in 16..4096.
	Dims int
}

// Validate reports whether c is usable; the error wraps ErrInvalidConfig.
func (c BuiltinConfig) Validate() error {
	if c.Dims == 0 {
		return nil
	}
	if c.Dims < minBuiltinDims || c.Dims > maxBuiltinDims {
		return fmt.Errorf("builtin dims %d not in %d..%d: %w", c.Dims, minBuiltinDims, maxBuiltinDims, ErrInvalidConfig)
	}
	return nil
}

// Builtin is the offline embedder: deterministic feature hashing of words,
// word pairs and character n-grams, needing no network, no model file and no
// warm-up. It is safe for concurrent use, and its vectors are identical across
// processes, runs and platforms for the same Dims and Go release (a letter
// newly added to Unicode may tokenize differently under another release).
//
// How: a text is lower-cased, the accented Latin letters of U+00C0..U+017F are
// folded to ASCII ("Zürich" becomes "zurich"), and it is split into words of
// Unicode letters and digits; each Han, Hiragana or Katakana character is a
// word of its own, and two adjacent CJK characters form a pair weighted like
// a word. The features are the words, the pairs of adjacent words, and the
// character 3-, 4- and 5-grams of each word with boundary markers ("<cat>").
// Each feature is hashed with a fixed seed to a bucket and a sign (signed
// hashing: collisions cancel on average instead of piling up) and weighted:
// 1+ln(tf) for words and pairs, n-grams sharing a budget below their word's
// weight, and a small English stop-word list down-weighted, not removed. The
// vector is L2-normalised; a text without words gets one fixed unit vector.
//
// What it is: a lexical-semantic hashing embedder. Texts come out close when
// they share words, word pairs or word pieces, so it catches exact terms,
// names and identifiers, morphology ("moved"/"moving", "berlin"/"berliner"),
// missing accents, and many typos (most n-grams survive one wrong letter).
//
// What it is not: a model of meaning. It knows no synonyms or paraphrases
// ("car" and "automobile" are unrelated), sees word order only in adjacent
// pairs, ignores negation, and its cosine scores are neither on the scale of
// nor comparable with a neural embedding model's. Scripts written without
// spaces other than CJK (Thai, Lao, Khmer) become one long word per run,
// matched mostly on its first characters. It is the fallback that keeps the
// vector leg useful offline, and the deterministic embedder of tests.
type Builtin struct {
	dims    int
	scratch sync.Pool // of *builtinScratch
}

var _ Embedder = (*Builtin)(nil)

// NewBuiltin returns a built-in embedder for cfg, or an error wrapping
// ErrInvalidConfig.
func NewBuiltin(cfg BuiltinConfig) (*Builtin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new builtin embedder: %w", err)
	}
	if cfg.Dims == 0 {
		cfg.Dims = defaultBuiltinDims
	}
	return &Builtin{dims: cfg.Dims}, nil
}

// Info returns the provider "builtin", the model "hash-ngram-v1" and the
// configured Dims; BaseURL is empty.
func (b *Builtin) Info() Info {
	return Info{Provider: builtinProvider, Model: builtinModel, Dims: b.dims}
}

// Embed returns one unit vector per text. The Kind is ignored: queries and
// documents are embedded alike. It fails only when ctx is done.
func (b *Builtin) Embed(ctx context.Context, req Request) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(req.Texts))
	slab := make([]float32, len(req.Texts)*b.dims)
	s := b.getScratch()
	defer b.putScratch(s)
	for i, text := range req.Texts {
		if i%64 == 63 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := slab[i*b.dims : (i+1)*b.dims : (i+1)*b.dims]
		s.embed(text, v)
		out[i] = v
	}
	return out, nil
}

func (b *Builtin) getScratch() *builtinScratch {
	if s, ok := b.scratch.Get().(*builtinScratch); ok {
		return s
	}
	return &builtinScratch{}
}

// maxPooledBytes keeps the scratch of one huge text from being held forever.
const maxPooledBytes = 1 << 20

func (b *Builtin) putScratch(s *builtinScratch) {
	if cap(s.buf) > maxPooledBytes || cap(s.toks) > maxPooledBytes/24 || len(s.words) > maxPooledBytes/16 {
		return
	}
	b.scratch.Put(s)
}

// token is one word of the text: buf[start:end] holds it lower-cased, with
// '<' at start-1 and '>' at end.
type token struct {
	start, end int32
	hash       uint64 // unigram feature hash
	slot       int32  // index in builtinScratch.words
	ascii      bool
	cjk        bool
}

// slot is an entry of an open-addressing count table; it is live when its
// gen is the scratch's current generation, so tables are never cleared.
// Sixteen bytes, so that the tables of a long text stay in cache.
type slot struct {
	key  uint64
	gen  uint32
	meta uint32 // the count, and stopBit for a stop word
}

// stopBit marks a stop word's slot; counts stay far below it.
const stopBit = 1 << 31

// ref names a live slot and the first token with its key.
type ref struct{ slot, tok int32 }

// builtinScratch holds the reusable buffers of one embedding at a time.
type builtinScratch struct {
	buf      []byte
	toks     []token
	words    []slot
	pairs    []slot
	distinct []ref // live word slots in first-seen order
	pairList []ref // live pair slots in first-seen order
	runeOffs []int32
	gen      uint32
}

// embed writes the unit vector of text to v.
func (s *builtinScratch) embed(text string, v []float32) {
	clear(v)
	s.tokenize(text)
	if len(s.toks) == 0 {
		v[bucket(emptyHash, len(v))] = 1
		return
	}
	s.count()
	for _, r := range s.distinct {
		s.addWord(v, s.words[r.slot].meta, &s.toks[r.tok])
	}
	for _, r := range s.pairList {
		p := &s.pairs[r.slot]
		a, b := &s.toks[r.tok], &s.toks[r.tok+1]
		w := wPair
		if a.cjk && b.cjk {
			w = wCJKPair
		}
		w *= tfWeight(p.meta) * stopFactor(s.words[a.slot].meta) * stopFactor(s.words[b.slot].meta)
		add(v, p.key, float32(w))
	}
	var sum float64
	for _, x := range v {
		f := float64(x)
		sum += f * f
	}
	if sum == 0 { // every feature cancelled out: vanishingly rare, never NaN
		clear(v)
		v[bucket(emptyHash, len(v))] = 1
		return
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}

// count hashes every token and counts distinct words and adjacent pairs.
func (s *builtinScratch) count() {
	n := len(s.toks)
	size := 64
	for size < 2*n {
		size <<= 1
	}
	if len(s.words) < size {
		s.words = make([]slot, size)
		s.pairs = make([]slot, size)
		s.gen = 0
	}
	s.gen++
	if s.gen == 0 { // wrapped: stale slots could look live
		clear(s.words)
		clear(s.pairs)
		s.gen = 1
	}
	s.distinct, s.pairList = s.distinct[:0], s.pairList[:0]
	for i := range s.toks {
		t := &s.toks[i]
		t.hash = spanHash(s.buf, int(t.start), int(t.end), tagWord)
		var fresh bool
		t.slot, fresh = s.insert(s.words, t.hash)
		if fresh {
			s.distinct = append(s.distinct, ref{t.slot, int32(i)})
			if isStopWord(t.hash) {
				s.words[t.slot].meta |= stopBit
			}
		}
		if i > 0 {
			k := mix(s.toks[i-1].hash*0x9e3779b97f4a7c15 + t.hash + tagPair)
			if p, fresh := s.insert(s.pairs, k); fresh {
				s.pairList = append(s.pairList, ref{p, int32(i - 1)})
			}
		}
	}
}

// insert counts key in table and returns its slot, and whether it is new.
func (s *builtinScratch) insert(table []slot, key uint64) (int32, bool) {
	mask := uint64(len(table) - 1)
	for i := key & mask; ; i = (i + 1) & mask {
		e := &table[i]
		if e.gen != s.gen {
			*e = slot{key: key, gen: s.gen, meta: 1}
			return int32(i), true
		}
		if e.key == key {
			e.meta++
			return int32(i), false
		}
	}
}

// addWord adds the unigram and character n-grams of a distinct word, first
// seen as t, to v; meta is its slot's count and stop bit.
func (s *builtinScratch) addWord(v []float32, meta uint32, t *token) {
	base := tfWeight(meta) * stopFactor(meta)
	add(v, t.hash, float32(wWord*base))
	if t.cjk {
		return // the character is the word; its pairs carry the context
	}
	lo := int(t.start) - 1 // the '<'
	hi := int(t.end) + 1   // past the '>'
	if t.ascii {
		if hi-lo > maxGramed {
			hi = lo + maxGramed
		}
		wg := float32(base * gramShare[hi-lo])
		const g3, g4, g5 = 3<<56 | tagGram<<59, 4<<56 | tagGram<<59, 5<<56 | tagGram<<59
		p := lo
		for ; p+5 <= hi; p++ { // every length fits: no branches
			x := binary.LittleEndian.Uint64(s.buf[p:])
			add(v, gramHash(x&0xffffff|g3), wg)
			add(v, gramHash(x&0xffffffff|g4), wg)
			add(v, gramHash(x&0xffffffffff|g5), wg)
		}
		if p+4 <= hi {
			x := binary.LittleEndian.Uint64(s.buf[p:])
			add(v, gramHash(x&0xffffff|g3), wg)
			add(v, gramHash(x&0xffffffff|g4), wg)
			p++
		}
		if p+3 <= hi {
			x := binary.LittleEndian.Uint64(s.buf[p:])
			add(v, gramHash(x&0xffffff|g3), wg)
		}
		return
	}
	offs := s.runeOffs[:0]
	p := lo
	for p < hi && len(offs) < maxGramed {
		offs = append(offs, int32(p))
		_, size := utf8.DecodeRune(s.buf[p:hi])
		p += size
	}
	offs = append(offs, int32(p)) // the end of the last rune taken
	s.runeOffs = offs
	runes := len(offs) - 1
	wg := float32(base * gramShare[runes])
	for k := 0; k+3 <= runes; k++ {
		for n := 3; n <= 5 && k+n <= runes; n++ {
			add(v, spanHash(s.buf, int(offs[k]), int(offs[k+n]), tagGram), wg)
		}
	}
}

// gramShare[n] is the weight of each n-gram of a bounded word of n
// characters: wGram spread over its 3-, 4- and 5-grams so that their norm is
// wGram whatever the word's length.
var gramShare = func() (t [maxGramed + 1]float64) {
	for n := range t {
		c := 0
		for k := 3; k <= 5; k++ {
			if n >= k {
				c += n - k + 1
			}
		}
		t[n] = wGram / math.Sqrt(float64(max(c, 1)))
	}
	return t
}()

// tfTable holds tfWeight for small counts.
var tfTable = func() (t [64]float64) {
	for i := 1; i < len(t); i++ {
		t[i] = tfCompute(uint32(i))
	}
	return t
}()

// tfWeight is the sub-linear term frequency 1+ln(tf) of a slot's meta.
func tfWeight(meta uint32) float64 {
	tf := meta &^ stopBit
	if tf < uint32(len(tfTable)) {
		return tfTable[tf]
	}
	return tfCompute(tf)
}

// tfCompute rounds 1+ln(tf) to 1/4096 so that a last-bit difference between
// platforms' math.Log cannot change a vector.
func tfCompute(tf uint32) float64 {
	return math.Round((1+math.Log(float64(tf)))*4096) / 4096
}

// stopFactor is wStop for a stop word's slot meta, else 1.
func stopFactor(meta uint32) float64 {
	if meta&stopBit != 0 {
		return wStop
	}
	return 1
}
