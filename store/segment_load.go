package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
	_ "unsafe" // go:linkname, for gse's embedded dictionary text

	"github.com/go-ego/gse"
	"github.com/go-ego/gse/hmm"
)

// The Chinese dictionary, loaded off the search path.
//
// gse's LoadDictEmbed("zh_s") built a double-array trie, a token table and,
// in CalcToken, a search-mode segmentation of every one of its 352,275
// words: 128 MiB of heap and 1.1-1.6 s on an idle 2-core box (2.5-3.4 s
// under load), on the first CJK text a process saw, search or ingest. Cut
// with the HMM (jieba's accurate mode, the only cut the store makes) reads
// none of that but each word's frequency, whether a string is a prefix of
// a word, and the total frequency. hanDict keeps exactly those in one map,
// built from the same embedded text with gse's own line parsing, frequency
// filter (Segmenter.Size) and key normalisation (SplitWords), first entry
// winning as in the trie; cut is gse's cutDAG line for line over it, and the
// HMM for unknown words is gse's (hmm.Cut). The cuts are identical
// (TestHanDictMatchesGse compares every dictionary word, its prefixes and a
// corpus of sentences with gse's own segmenter). Measured figures are in
// the commit that introduced this file.
//
// When it loads: never for a shard without Han text. Open looks for a chunk
// with Han characters (chunks with fts_ver <> 0 only, so a shard without
// CJK text costs a scan of that column); when there is one, the shard
// counts as wanting the dictionary and an owned goroutine loads it (Close
// cancels it and waits). Ingest of Han text loads it on the write path.
// A query with Han characters uses the dictionary when it is loaded; before
// that it waits for the load when some open shard wants it (only right
// after start: the load began at Open), and otherwise answers without it,
// cutting a Han run into its character bigrams like Kana: no open shard
// holds a Han character then, so no Han term can match anything and the
// results are the same (only which terms a query of more than
// maxMatchTerms terms keeps may differ).

// gseZhS is gse's embedded simplified-Chinese dictionary (data/dict/zh/
// s_1.txt, "word freq pos" a line), the text LoadDictEmbed("zh_s") parses.
// gse exports no accessor; the link fails if a gse upgrade drops the
// variable, and TestHanDictMatchesGse fails if its meaning changes.
//
//go:linkname gseZhS github.com/go-ego/gse.zhS
var gseZhS string

// hanDictPiece is how many dictionary lines a load parses between two looks
// at its context.
const hanDictPiece = 16384

// hanDict is what cutting Han text needs of gse's dictionary.
type hanDict struct {
	// words maps every dictionary word to its frequency (> 0) and every
	// proper prefix of a word that is no word itself to 0.
	words map[string]float64
	// logTotal is the natural log of the sum of the words' frequencies.
	logTotal float64
}

// han is the process's Chinese dictionary and what decides when it loads.
var han struct {
	dict atomic.Pointer[hanDict] // nil until loaded; never unloaded
	// sem is held by the one goroutine building the dictionary.
	sem chan struct{}
	// wanted counts the open shards that hold Han text; ingested is set
	// once Han text is segmented for the index. Either makes a query wait
	// for the dictionary instead of answering without it.
	wanted   atomic.Int64
	ingested atomic.Bool
	// loads counts completed loads (tests).
	loads atomic.Int64
	// pieceHook, when set (tests only), runs after each piece of a load.
	pieceHook func(ctx context.Context)
}

func init() { han.sem = make(chan struct{}, 1) }

// loadHanDict returns the dictionary, building it unless another goroutine
// has; it waits for a load in progress. It fails only with ctx's error; a
// cancelled load leaves nothing behind and the next caller starts over.
func loadHanDict(ctx context.Context) (*hanDict, error) {
	if d := han.dict.Load(); d != nil {
		return d, nil
	}
	select {
	case han.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-han.sem }()
	if d := han.dict.Load(); d != nil {
		return d, nil
	}
	d, err := buildHanDict(ctx, gseZhS)
	if err != nil {
		return nil, err
	}
	han.dict.Store(d)
	han.loads.Add(1)
	return d, nil
}

// buildHanDict parses dictionary text as gse's LoadDictStr does.
func buildHanDict(ctx context.Context, text string) (*hanDict, error) {
	// The settings gse's Segmenter.Init gives LoadDictStr.
	cfg := &gse.Segmenter{MinTokenFreq: 2, TextFreq: "2.0"}
	hmm.LoadModel() // what Init does; before any cut reads the model
	d := &hanDict{words: make(map[string]float64, 1<<19)}
	var total float64
	for n := 1; text != ""; n++ {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if n%hanDictPiece == 0 {
			if hook := han.pieceHook; hook != nil {
				hook(ctx)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		f := strings.Split(line, " ")
		word := strings.TrimSpace(f[0])
		freqText := ""
		if len(f) > 1 {
			freqText = strings.TrimSpace(f[1])
		}
		freq := cfg.Size(len(f), word, freqText)
		if freq == 0 {
			continue
		}
		key := dictKey(word)
		if d.words[key] > 0 {
			continue // the trie keeps the first
		}
		d.words[key] = freq
		total += freq
		for i := 0; i < len(key); { // prefixes at rune boundaries
			_, size := utf8.DecodeRuneInString(key[i:])
			i += size
			if i < len(key) {
				if _, ok := d.words[key[:i]]; !ok {
					d.words[key[:i]] = 0
				}
			}
		}
	}
	d.logTotal = math.Log(total)
	return d, nil
}

// dictKey returns the trie key gse makes of a dictionary word: the bytes of
// SplitWords joined, which lowercase its runs of one- and two-byte letters
// and digits. A word without such runes (nearly all) is its own key and
// shares the embedded text's bytes.
func dictKey(word string) string {
	for _, r := range word {
		if utf8.RuneLen(r) <= 2 && (unicode.IsLetter(r) || unicode.IsNumber(r)) {
			var b []byte
			for _, t := range gse.SplitWords(gse.Text(word)) {
				b = append(b, t...)
			}
			return string(b)
		}
	}
	return word
}

// find reports the frequency of s and whether s is a word or a prefix of
// one (frequency 0), as gse's Dictionary.Find.
func (d *hanDict) find(s string) (float64, bool) {
	f, ok := d.words[s]
	return f, ok
}

// cut is gse's Segmenter.Cut(s, true) (cutDAG: the most probable path
// through the dictionary DAG, the HMM for runs of single characters).
func (d *hanDict) cut(str string) []string {
	result := make([]string, 0, int(float32(len(str))/gse.RatioWord)+1)
	if gse.ToLower {
		str = strings.ToLower(str)
	}
	runes := []rune(str)
	routes := d.calc(runes)
	var buf []rune
	flush := func() {
		if len(buf) == 0 {
			return
		}
		s := string(buf)
		if len(buf) == 1 {
			result = append(result, s)
		} else if f, ok := d.find(s); !ok || f == 0 {
			result = append(result, hmm.Cut(s)...)
		} else {
			for _, r := range buf {
				result = append(result, string(r))
			}
		}
		buf = nil
	}
	for x := 0; x < len(runes); {
		y := routes[x].index + 1
		if y-x == 1 {
			buf = append(buf, runes[x:y]...)
		} else {
			flush()
			result = append(result, string(runes[x:y]))
		}
		x = y
	}
	flush()
	return result
}

// hanRoute is the best path from one rune on: its log probability and the
// index of the last rune of its first word.
type hanRoute struct {
	freq  float64
	index int
}

// calc is gse's calc: the best route from every rune, right to left.
func (d *hanDict) calc(runes []rune) []hanRoute {
	n := len(runes)
	rs := make([]hanRoute, n+1)
	for idx := n - 1; idx >= 0; idx-- {
		set := false
		for _, i := range d.dag(runes, idx) {
			freq, ok := d.find(string(runes[idx : i+1]))
			var r hanRoute
			if ok {
				r = hanRoute{freq: math.Log(freq) - d.logTotal + rs[i+1].freq, index: i}
			} else {
				r = hanRoute{freq: math.Log(1.0) - d.logTotal + rs[i+1].freq, index: i}
			}
			if v := rs[idx]; !set || v.freq < r.freq || v.freq == r.freq && v.index < r.index {
				rs[idx], set = r, true
			}
		}
	}
	return rs
}

// dag is gse's getDag for rune k: the last runes of the dictionary words
// that start at k, or k alone.
func (d *hanDict) dag(runes []rune, k int) []int {
	var ends []int
	for i := k; i < len(runes); i++ {
		freq, ok := d.find(string(runes[k : i+1]))
		if !ok {
			break
		}
		if freq > 0 {
			ends = append(ends, i)
		}
	}
	if len(ends) == 0 {
		ends = append(ends, k)
	}
	return ends
}

// hanForIndex returns the dictionary for segmenting text to index, loading
// it if needed (on the write path: Apply, the re-index at Open).
func hanForIndex() *hanDict {
	if d := han.dict.Load(); d != nil {
		return d
	}
	han.ingested.Store(true) // before loading: from now on queries wait
	d, _ := loadHanDict(context.Background())
	return d
}

// hanForQuery returns the dictionary for cutting a query, waiting for its
// load when an open shard holds Han text or Han text was indexed, and nil
// when no open shard holds any (the query then needs none, see above).
func hanForQuery() *hanDict {
	if d := han.dict.Load(); d != nil {
		return d
	}
	if han.wanted.Load() == 0 && !han.ingested.Load() {
		return nil
	}
	d, _ := loadHanDict(context.Background())
	return d
}

// waitHanForQuery waits, at most until ctx ends, for the dictionary a query
// with Han text needs (see hanForQuery), so that a search right after a
// start waits for the background load within its own deadline rather than
// without one.
func waitHanForQuery(ctx context.Context) error {
	if han.dict.Load() != nil || (han.wanted.Load() == 0 && !han.ingested.Load()) {
		return nil
	}
	if _, err := loadHanDict(ctx); err != nil {
		return fmt.Errorf("wait for the chinese dictionary: %w", err)
	}
	return nil
}

// hanLoader is a shard's share in the dictionary: the goroutine loading it
// for a shard that holds Han text.
type hanLoader struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startHanLoad starts loading the dictionary in the background when the
// shard behind db holds Han text, and returns the loader to stop (nil when
// it does not: then nothing is loaded).
func startHanLoad(ctx context.Context, db *sql.DB) (*hanLoader, error) {
	has, err := holdsHan(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("look for chinese text: %w", err)
	}
	if !has {
		return nil, nil
	}
	han.wanted.Add(1)
	lctx, cancel := context.WithCancel(context.Background())
	l := &hanLoader{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		_, _ = loadHanDict(lctx) // fails only when cancelled by stop
	}()
	return l, nil
}

// stop cancels the load unless done and waits for the goroutine, at most
// until ctx ends. Safe on a nil loader.
func (l *hanLoader) stop(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.cancel()
	select {
	case <-l.done:
	case <-ctx.Done():
		return fmt.Errorf("stop dictionary load: %w", ctx.Err())
	}
	han.wanted.Add(-1)
	return nil
}

// WaitSegmenter blocks until the Chinese dictionary the shard's keyword
// searches need is loaded, or ctx ends; it returns nil at once for a shard
// without Han text. A worker can wait on it before it reports ready, so
// that not even a search right after start waits for the load.
func (s *Shard) WaitSegmenter(ctx context.Context) error {
	if s.han == nil {
		return nil
	}
	select {
	case <-s.han.done:
	case <-ctx.Done():
		return fmt.Errorf("wait for segmenter: %w", ctx.Err())
	}
	if han.dict.Load() == nil {
		return fmt.Errorf("wait for segmenter: %w", ErrClosed) // cancelled by Close
	}
	return nil
}

// SegmenterLoaded reports whether this process has loaded the Chinese
// dictionary (it is never unloaded).
func SegmenterLoaded() bool { return han.dict.Load() != nil }

// hanGlob is a GLOB pattern matching text with a character of the Han
// script (a superset of classHan: holdsHan checks each match).
var hanGlob = func() string {
	var b strings.Builder
	b.WriteString("*[")
	for _, r := range unicode.Han.R16 {
		fmt.Fprintf(&b, "%c-%c", rune(r.Lo), rune(r.Hi))
	}
	for _, r := range unicode.Han.R32 {
		fmt.Fprintf(&b, "%c-%c", rune(r.Lo), rune(r.Hi))
	}
	b.WriteString("]*")
	return b.String()
}()

// sqlHoldsHan lists the chunks with CJK text (or not indexed yet) whose text
// or context has a character of hanGlob; it reads the partial index
// chunks_cjk (migration 0007), not every chunk.
const sqlHoldsHan = `SELECT text, context FROM chunks
	WHERE (fts_ver IS NULL OR fts_ver <> 0) AND (text GLOB ?1 OR context GLOB ?1)`

// holdsHan reports whether a chunk of the shard behind db has a Han
// character in its text or context. Only chunks indexed as having CJK text
// (fts_ver <> 0) are looked at, and the first one found ends the search.
func holdsHan(ctx context.Context, db *sql.DB) (bool, error) {
	rows, err := db.QueryContext(ctx, sqlHoldsHan, hanGlob)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var text, context string
		if err := rows.Scan(&text, &context); err != nil {
			return false, err
		}
		if hasHan(text) || hasHan(context) {
			return true, nil
		}
	}
	return false, rows.Err()
}

// hasHan reports whether s has a rune of classHan.
func hasHan(s string) bool {
	for _, run := range cjkRuns(s) {
		if run.class == classHan {
			return true
		}
	}
	return false
}
