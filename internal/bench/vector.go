package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"memindex/embedder"
	"memindex/internal/evalcorpus"
)

// The vector suite compares four ways to answer a k-nearest-neighbour query
// over the same vectors: the memindex vector leg (store.Shard.VectorSearch
// over a real shard file: an int8 scan of the in-memory index, rescored
// with the float32 vectors of vec0), sqlite-vec's vec0 KNN over a bare vec0
// table, JSON-encoded vectors in a plain table decoded and scanned in
// process at every query, and a plain in-memory Go scan of a flat []float32
// (exact by construction, the float32 floor; the other three are checked
// against it). The vectors are seeded random unit vectors, or, with
// MEMINDEX_BENCH_VECTOR_DATA=text, the built-in embedder's vectors of
// generated conversation messages with the corpus's questions as queries
// (vectorTextData).

const (
	vecDims = 384
	vecK    = 10
	// vecDataVersion names the layout of the cached files; a change to how
	// they are built changes it, so stale caches are rebuilt.
	vecDataVersion = "memindex-bench-vector/v1"
	vecNamespace   = "bench"
)

// Variant names, in the order they appear in tables.
const (
	VariantMemindex = "memindex"
	VariantVec0     = "vec0"
	VariantJSON     = "json-scan"
	VariantGoScan   = "go-scan"
)

// VectorFigure is one variant at one corpus size.
type VectorFigure struct {
	Size    int    `json:"size"`
	Variant string `json:"variant"`
	// Queries is how many timed queries ran (fewer than asked when the
	// variant's time budget ran out).
	Queries int     `json:"queries"`
	P50Ms   float64 `json:"p50Ms"`
	P99Ms   float64 `json:"p99Ms"`
	// Recall is recall@10 against the exact in-memory scan, averaged over
	// the timed queries.
	Recall    float64 `json:"recallAt10"`
	DiskBytes int64   `json:"diskBytes"`
	// RSSBytes is the growth of the process's resident set (VmRSS) from
	// before the variant was loaded to after it answered its warm-up
	// queries, each reading taken after a GC that returns freed memory to
	// the OS.
	RSSBytes    int64   `json:"rssBytes"`
	LoadSeconds float64 `json:"loadSeconds"`
	Threads     int     `json:"threads"`
	// Data is the kind of vectors: "random" or "text" (vectorData).
	Data string `json:"data,omitempty"`
}

// VectorConfig is what the vector suite runs.
type VectorConfig struct {
	Sizes   []int
	Queries int
	// Budget bounds the timed queries of one variant at one size: a variant
	// whose warm-up query takes longer than Budget/Queries runs fewer
	// queries (at least MinQueries).
	Budget     time.Duration
	MinQueries int
	CacheDir   string
	Seed       uint64
	// Data is "random" or "text" (vectorData); empty means
	// MEMINDEX_BENCH_VECTOR_DATA, else random.
	Data string
	Log  func(format string, a ...any)
}

// Kinds of vector data.
const (
	vecDataRandom = "random"
	vecDataText   = "text"
)

// vecVariant is one way of answering a query, loaded from the cached files.
type vecVariant struct {
	name    string
	threads int
	path    string // "" when nothing is on disk
	load    func(ctx context.Context) error
	// search returns the ids (1-based row numbers) of the top vecK.
	search func(ctx context.Context, q []float32) ([]int64, error)
	close  func() error
}

// RunVectorSuite builds (or reuses) the data of each size and measures the
// four variants on it.
func RunVectorSuite(ctx context.Context, cfg VectorConfig) ([]VectorFigure, error) {
	if cfg.Data == "" {
		cfg.Data = cmp.Or(os.Getenv("MEMINDEX_BENCH_VECTOR_DATA"), vecDataRandom)
	}
	if cfg.Data != vecDataRandom && cfg.Data != vecDataText {
		return nil, fmt.Errorf("vector suite: data %q: want %s or %s", cfg.Data, vecDataRandom, vecDataText)
	}
	var out []VectorFigure
	for _, size := range cfg.Sizes {
		figs, err := benchVectorSize(ctx, cfg, size)
		if err != nil {
			return out, fmt.Errorf("vector suite, %d vectors: %w", size, err)
		}
		out = append(out, figs...)
	}
	return out, nil
}

// benchVectors returns n seeded random unit vectors of vecDims, row-major:
// the first n of a larger set are the same vectors.
func benchVectors(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]float32, n*vecDims)
	for i := 0; i < n; i++ {
		v := out[i*vecDims : (i+1)*vecDims]
		var norm float64
		for j := range v {
			f := r.NormFloat64()
			v[j] = float32(f)
			norm += f * f
		}
		inv := float32(1 / math.Sqrt(norm))
		for j := range v {
			v[j] *= inv
		}
	}
	return out
}

// vectorData returns size corpus vectors and nq query vectors of the kind
// cfg.Data names, row-major: seeded random unit vectors, or the built-in
// embedder's vectors of generated text (vectorTextData).
func vectorData(ctx context.Context, cfg VectorConfig, size, nq int) (data, queries []float32, err error) {
	if cfg.Data == vecDataText {
		return vectorTextData(ctx, cfg.Seed, size, nq)
	}
	return benchVectors(cfg.Seed, size), benchVectors(cfg.Seed+1_000_003, nq), nil
}

// vectorTextData embeds, with the built-in embedder, the first size
// messages of generated English conversations (internal/evalcorpus, 999
// conversations a seed, seeds from seed on until there are enough) and nq
// of their questions as queries (embedded as queries). Messages repeat
// across conversations, so some vectors are exact duplicates, as in a real
// namespace.
func vectorTextData(ctx context.Context, seed uint64, size, nq int) (data, queries []float32, err error) {
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: vecDims})
	if err != nil {
		return nil, nil, err
	}
	var texts, questions []string
	for sd := seed; len(texts) < size || len(questions) < nq; sd++ {
		c, err := evalcorpus.Generate(evalcorpus.Config{Lang: "en", Conversations: evalcorpus.MaxConversations, Seed: sd})
		if err != nil {
			return nil, nil, err
		}
		for _, e := range c.Events {
			if len(texts) < size {
				texts = append(texts, e.Text)
			}
		}
		for _, q := range c.Queries {
			if len(questions) < nq {
				questions = append(questions, q.Question)
			}
		}
	}
	embed := func(texts []string, kind embedder.Kind) ([]float32, error) {
		out := make([]float32, 0, len(texts)*vecDims)
		for off := 0; off < len(texts); off += 1000 {
			vs, err := emb.Embed(ctx, embedder.Request{Texts: texts[off:min(off+1000, len(texts))], Kind: kind})
			if err != nil {
				return nil, err
			}
			for _, v := range vs {
				out = append(out, v...)
			}
		}
		return out, nil
	}
	if data, err = embed(texts, embedder.KindDocument); err != nil {
		return nil, nil, err
	}
	if queries, err = embed(questions, embedder.KindQuery); err != nil {
		return nil, nil, err
	}
	return data, queries, nil
}

func benchVectorSize(ctx context.Context, cfg VectorConfig, size int) ([]VectorFigure, error) {
	name := fmt.Sprintf("vector-%d", size)
	if cfg.Data != vecDataRandom {
		name = fmt.Sprintf("vector-%s-%d", cfg.Data, size)
	}
	dir := filepath.Join(cfg.CacheDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}

	figs := map[string]*VectorFigure{}
	fig := func(name string, threads int) *VectorFigure {
		f := &VectorFigure{Size: size, Variant: name, Threads: threads, Data: cfg.Data}
		figs[name] = f
		return f
	}

	// go-scan first: its resident memory is the vectors themselves (and,
	// for text, the queries and what embedding them left behind).
	rss0 := settledRSS()
	t0 := time.Now()
	data, queries, err := vectorData(ctx, cfg, size, cfg.Queries+8) // 8 warm-up queries
	if err != nil {
		return nil, err
	}
	warm, timed := queries[:8*vecDims], queries[8*vecDims:]
	goscan := goScanVariant(data)
	gf := fig(VariantGoScan, goscan.threads)
	gf.LoadSeconds = time.Since(t0).Seconds()

	if err := buildVectorFiles(ctx, cfg, dir, size, data); err != nil {
		return nil, err
	}
	for i := 0; i < 3; i++ {
		if _, err := goscan.search(ctx, warm[i*vecDims:(i+1)*vecDims]); err != nil {
			return nil, err
		}
	}
	gf.RSSBytes = settledRSS() - rss0

	variants := []*vecVariant{
		memindexVariant(dir, size),
		vec0Variant(dir),
		jsonVariant(dir),
		goscan,
	}
	defer func() {
		for _, v := range variants {
			if v.close != nil {
				v.close()
			}
		}
	}()
	n := map[string]int{VariantGoScan: cfg.Queries}
	lat := map[string][]float64{}
	hits := map[string]int{}
	for _, v := range variants[:3] {
		f := fig(v.name, v.threads)
		f.DiskBytes = fileBytes(v.path)
		before := settledRSS()
		t := time.Now()
		if err := v.load(ctx); err != nil {
			return nil, fmt.Errorf("%s: load: %w", v.name, err)
		}
		f.LoadSeconds = time.Since(t).Seconds()
		// Warm up, and estimate how many timed queries fit the budget.
		var slowest, fastest time.Duration
		var first []int64
		for i := 0; i < 3; i++ {
			t := time.Now()
			got, err := v.search(ctx, warm[i*vecDims:(i+1)*vecDims])
			if err != nil {
				return nil, fmt.Errorf("%s: warm-up query: %w", v.name, err)
			}
			el := time.Since(t)
			slowest = max(slowest, el)
			if i == 0 {
				first, fastest = got, el
			}
			fastest = min(fastest, el)
			if el > time.Second {
				break // one slow query is warm-up enough
			}
		}
		f.RSSBytes = settledRSS() - before
		n[v.name] = cfg.Queries
		// The fastest warm-up query estimates a warm one (the first reads
		// the file into the page cache).
		if per := fastest; per > 0 && time.Duration(cfg.Queries)*per > cfg.Budget {
			n[v.name] = max(cfg.MinQueries, int(cfg.Budget/per))
		}
		if slowest > cfg.Budget {
			// One query takes longer than the budget: its warm-up query is
			// the only sample (Queries = 1, not interleaved).
			n[v.name] = 0
			exact, err := goscan.search(ctx, warm[:vecDims])
			if err != nil {
				return nil, err
			}
			lat[v.name] = []float64{float64(slowest.Nanoseconds()) / 1e6}
			hits[v.name] = overlap(first, exact)
		}
		cfg.Log("  %d vectors, %s: loaded in %.1fs, %s on disk, RSS +%s, %d timed queries", size, v.name, f.LoadSeconds, benchBytes(f.DiskBytes), benchBytes(f.RSSBytes), n[v.name])
	}

	// Timed queries, interleaved: query i goes to every variant still
	// within its count, starting with a different variant each time.
	for i := 0; i < cfg.Queries; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q := timed[i*vecDims : (i+1)*vecDims]
		exact, err := goscan.search(ctx, q)
		if err != nil {
			return nil, err
		}
		for j := range variants {
			v := variants[(i+j)%len(variants)]
			if i >= n[v.name] {
				continue
			}
			t := time.Now()
			got, err := v.search(ctx, q)
			el := time.Since(t)
			if err != nil {
				return nil, fmt.Errorf("%s: query %d: %w", v.name, i, err)
			}
			lat[v.name] = append(lat[v.name], float64(el.Nanoseconds())/1e6)
			hits[v.name] += overlap(got, exact)
		}
	}
	out := make([]VectorFigure, 0, len(variants))
	for _, v := range variants {
		f := figs[v.name]
		l := lat[v.name]
		slices.Sort(l)
		f.Queries = len(l)
		f.P50Ms, f.P99Ms = benchPercentile(l, 0.50), benchPercentile(l, 0.99)
		if len(l) > 0 {
			f.Recall = float64(hits[v.name]) / float64(len(l)*vecK)
		}
		out = append(out, *f)
		cfg.Log("  %d vectors, %-9s p50 %8.2f ms  p99 %8.2f ms  recall@10 %.3f  (%d queries, %d threads)", size, v.name, f.P50Ms, f.P99Ms, f.Recall, f.Queries, f.Threads)
	}
	return out, nil
}

// overlap counts the ids of got that are in exact.
func overlap(got, exact []int64) int {
	n := 0
	for _, id := range got {
		if slices.Contains(exact, id) {
			n++
		}
	}
	return n
}

// percentile returns the p-quantile of sorted (nearest rank); 0 for none.
func benchPercentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// topN keeps the vecK best (id, score) pairs, best first.
type topN struct {
	n     int
	id    [vecK]int64
	score [vecK]float32
}

func (t *topN) push(id int64, s float32) {
	if t.n == vecK && s <= t.score[vecK-1] {
		return
	}
	i := min(t.n, vecK-1)
	if t.n < vecK {
		t.n++
	}
	for i > 0 && t.score[i-1] < s {
		t.id[i], t.score[i] = t.id[i-1], t.score[i-1]
		i--
	}
	t.id[i], t.score[i] = id, s
}

func (t *topN) ids() []int64 { return append([]int64(nil), t.id[:t.n]...) }

// settledRSS returns the resident set size of the process after a GC that
// returns freed memory to the OS; 0 where /proc is not available.
func settledRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(l, []byte("VmRSS:")); ok {
			f := strings.Fields(string(rest))
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// fileBytes is the size of a SQLite file with its -wal and -shm files.
func fileBytes(path string) int64 {
	if path == "" {
		return 0
	}
	var n int64
	for _, s := range []string{"", "-wal", "-shm"} {
		if st, err := os.Stat(path + s); err == nil {
			n += st.Size()
		}
	}
	return n
}

func benchBytes(n int64) string {
	const unit = 1024
	if n < 0 {
		return "-" + benchBytes(-n)
	}
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n), "B"
	for _, next := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if f < unit {
			break
		}
		f, u = f/unit, next
	}
	return fmt.Sprintf("%.1f %s", f, u)
}

// writeVectorTable prints the vector figures as a markdown table.
func writeVectorTable(w io.Writer, figs []VectorFigure) {
	fmt.Fprintln(w, "| vectors | variant | threads | queries | p50 ms | p99 ms | recall@10 | on disk | RSS growth | load s | data |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, f := range figs {
		disk := benchBytes(f.DiskBytes)
		if f.DiskBytes == 0 {
			disk = "—"
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %.3f | %s | %s | %.1f | %s |\n", benchThousands(f.Size), f.Variant, f.Threads, f.Queries,
			benchMs(f.P50Ms), benchMs(f.P99Ms), f.Recall, disk, benchBytes(f.RSSBytes), f.LoadSeconds, cmp.Or(f.Data, vecDataRandom))
	}
}

// ms formats milliseconds with three significant digits or so.
func benchMs(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func benchThousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
