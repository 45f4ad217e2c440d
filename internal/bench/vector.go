package bench

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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

	"github.com/sourcegraph/conc"

	"memindex"
	"memindex/embedder"
	"memindex/internal/evalcorpus"
	"memindex/store"
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

// buildVectorFiles writes the three files of dir from data unless a
// previous run finished them for the same size, seed and layout.
func buildVectorFiles(ctx context.Context, cfg VectorConfig, dir string, size int, data []float32) error {
	marker := filepath.Join(dir, "READY")
	want := fmt.Sprintf("%s size=%d seed=%d dims=%d\n", vecDataVersion, size, cfg.Seed, vecDims)
	if cfg.Data != vecDataRandom {
		want = fmt.Sprintf("%s data=%s size=%d seed=%d dims=%d\n", vecDataVersion, cfg.Data, size, cfg.Seed, vecDims)
	}
	if b, err := os.ReadFile(marker); err == nil && string(b) == want {
		cfg.Log("  %d vectors: reusing %s", size, dir)
		return nil
	}
	os.Remove(marker)
	for _, name := range []string{"memindex.db", "vec0.db", "json.db"} {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(filepath.Join(dir, name+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	steps := []struct {
		name  string
		build func(context.Context, string, int, []float32) error
	}{
		{"memindex shard", buildShardFile},
		{"vec0 table", buildVec0File},
		{"JSON table", buildJSONFile},
	}
	for _, st := range steps {
		t := time.Now()
		if err := st.build(ctx, dir, size, data); err != nil {
			return fmt.Errorf("build %s: %w", st.name, err)
		}
		cfg.Log("  %d vectors: built the %s in %.1fs", size, st.name, time.Since(t).Seconds())
	}
	return os.WriteFile(marker, []byte(want), 0o644)
}

// buildShardFile stores each vector as one chunk of a shard (sqlite-vec
// mode), through Apply as the worker does, in batches of 2,000 chunks.
func buildShardFile(ctx context.Context, dir string, size int, data []float32) error {
	sh, err := store.Open(ctx, filepath.Join(dir, "memindex.db"), store.Config{Dims: vecDims})
	if err != nil {
		return err
	}
	const per = 2000
	ts := time.Unix(1_700_000_000, 0)
	for off, b := 0, 0; off < size; off, b = off+per, b+1 {
		ref := store.SessionRef{Namespace: vecNamespace, SessionKey: "bench", SessionID: strconv.Itoa(b)}
		sc := store.SessionChunks{Session: ref}
		for i := off; i < min(off+per, size); i++ {
			id := strconv.Itoa(i + 1)
			sc.Chunks = append(sc.Chunks, store.Chunk{ID: id, Namespace: vecNamespace, Source: memindex.SourceSessions,
				SessionKey: ref.SessionKey, SessionID: ref.SessionID, SeqStart: int64(i), SeqEnd: int64(i),
				Text: "v" + id, TimeStart: ts, TimeEnd: ts, Vector: data[i*vecDims : (i+1)*vecDims]})
		}
		if _, err := sh.Apply(ctx, store.Batch{Seq: uint64(b + 1), Rechunk: []store.SessionChunks{sc}}); err != nil {
			sh.Close(ctx)
			return err
		}
	}
	return sh.Close(ctx) // checkpoints the WAL into the file
}

// buildVec0File stores the vectors in a bare vec0 table (rowid = row
// number, cosine distance), in transactions of 10,000 rows.
func buildVec0File(ctx context.Context, dir string, size int, data []float32) error {
	return fillTable(ctx, filepath.Join(dir, "vec0.db"),
		fmt.Sprintf(`CREATE VIRTUAL TABLE vecs USING vec0(embedding float[%d] distance_metric=cosine)`, vecDims),
		`INSERT INTO vecs(rowid, embedding) VALUES (?, ?)`, size,
		func(i int, buf []byte) ([]byte, any) {
			buf = store.EncodeVector(buf[:0], data[i*vecDims:(i+1)*vecDims])
			return buf, buf
		})
}

// buildJSONFile stores the vectors as JSON arrays (encoding/json's text of
// []float32) in a plain table: the naive layout.
func buildJSONFile(ctx context.Context, dir string, size int, data []float32) error {
	return fillTable(ctx, filepath.Join(dir, "json.db"),
		`CREATE TABLE vecs(id INTEGER PRIMARY KEY, embedding TEXT NOT NULL)`,
		`INSERT INTO vecs(id, embedding) VALUES (?, ?)`, size,
		func(i int, _ []byte) ([]byte, any) {
			b, _ := json.Marshal(data[i*vecDims : (i+1)*vecDims])
			return nil, string(b)
		})
}

// fillTable creates path with create and inserts size rows with insert
// (id i+1, the value row gives).
func fillTable(ctx context.Context, path, create, insert string, size int, row func(i int, buf []byte) ([]byte, any)) error {
	db, err := store.OpenSQLite(path)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, create); err != nil {
		return err
	}
	var buf []byte
	const per = 10000
	for off := 0; off < size; off += per {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, insert)
		if err != nil {
			tx.Rollback()
			return err
		}
		for i := off; i < min(off+per, size); i++ {
			var v any
			buf, v = row(i, buf)
			if _, err := st.ExecContext(ctx, i+1, v); err != nil {
				tx.Rollback()
				return err
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// memindexVariant searches a shard opened from the cached file, as the
// query engine's vector leg does (the int8 index loaded at Open, the best
// candidates rescored with their float32 vectors from vec0).
func memindexVariant(dir string, size int) *vecVariant {
	v := &vecVariant{name: VariantMemindex, path: filepath.Join(dir, "memindex.db"), threads: scanThreads(size)}
	var sh *store.Shard
	v.load = func(ctx context.Context) error {
		var err error
		sh, err = store.Open(ctx, v.path, store.Config{Dims: vecDims})
		return err
	}
	v.search = func(ctx context.Context, q []float32) ([]int64, error) {
		cs, err := sh.VectorSearch(ctx, vecNamespace, q, store.Filter{}, vecK)
		if err != nil {
			return nil, err
		}
		ids := make([]int64, len(cs))
		for i, c := range cs {
			if ids[i], err = strconv.ParseInt(c.ID, 10, 64); err != nil {
				return nil, fmt.Errorf("chunk id %q: %w", c.ID, err)
			}
		}
		return ids, nil
	}
	v.close = func() error {
		if sh == nil {
			return nil
		}
		return sh.Close(context.Background())
	}
	return v
}

// vec0Variant asks sqlite-vec for the k nearest rows of the whole table.
func vec0Variant(dir string) *vecVariant {
	v := &vecVariant{name: VariantVec0, path: filepath.Join(dir, "vec0.db"), threads: 1}
	var db *sql.DB
	var st *sql.Stmt
	v.load = func(ctx context.Context) error {
		var err error
		if db, err = store.OpenSQLite(v.path); err != nil {
			return err
		}
		db.SetMaxOpenConns(1)
		st, err = db.PrepareContext(ctx, `SELECT rowid, distance FROM vecs WHERE embedding MATCH ? AND k = ? ORDER BY distance`)
		return err
	}
	var buf []byte
	v.search = func(ctx context.Context, q []float32) ([]int64, error) {
		buf = store.EncodeVector(buf[:0], q)
		rows, err := st.QueryContext(ctx, buf, vecK)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		ids := make([]int64, 0, vecK)
		for rows.Next() {
			var id int64
			var d float64
			if err := rows.Scan(&id, &d); err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, rows.Err()
	}
	v.close = func() error {
		if db == nil {
			return nil
		}
		st.Close()
		return db.Close()
	}
	return v
}

// jsonVariant reads every row's JSON text, decodes it with encoding/json and
// keeps the best vecK by a plain dot-product loop: what an application that
// keeps vectors as JSON does.
func jsonVariant(dir string) *vecVariant {
	v := &vecVariant{name: VariantJSON, path: filepath.Join(dir, "json.db"), threads: 1}
	var db *sql.DB
	v.load = func(ctx context.Context) error {
		var err error
		if db, err = store.OpenSQLite(v.path); err != nil {
			return err
		}
		db.SetMaxOpenConns(1)
		return db.PingContext(ctx)
	}
	v.search = func(ctx context.Context, q []float32) ([]int64, error) {
		rows, err := db.QueryContext(ctx, `SELECT id, embedding FROM vecs`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var top topN
		vec := make([]float32, 0, vecDims)
		for rows.Next() {
			var id int64
			var text sql.RawBytes
			if err := rows.Scan(&id, &text); err != nil {
				return nil, err
			}
			vec = vec[:0]
			if err := json.Unmarshal(text, &vec); err != nil {
				return nil, fmt.Errorf("row %d: %w", id, err)
			}
			var s float32
			for i, f := range q {
				s += f * vec[i]
			}
			top.push(id, s)
		}
		return top.ids(), rows.Err()
	}
	v.close = func() error {
		if db == nil {
			return nil
		}
		return db.Close()
	}
	return v
}

// goScanVariant scans a flat []float32 with the shard's dot product, split
// across GOMAXPROCS goroutines as the shard's index is from 20,000 vectors.
func goScanVariant(data []float32) *vecVariant {
	n := len(data) / vecDims
	parts := scanThreads(n)
	v := &vecVariant{name: VariantGoScan, threads: parts}
	v.search = func(_ context.Context, q []float32) ([]int64, error) {
		tops := make([]topN, parts)
		step := (n + parts - 1) / parts
		scan := func(p int) {
			t := &tops[p]
			for i := p * step; i < min((p+1)*step, n); i++ {
				t.push(int64(i+1), store.Dot(q, data[i*vecDims:(i+1)*vecDims]))
			}
		}
		if parts == 1 {
			scan(0)
		} else {
			var wg conc.WaitGroup
			for p := range parts {
				wg.Go(func() { scan(p) })
			}
			wg.Wait()
		}
		all := tops[0]
		for _, t := range tops[1:] {
			for i := range t.n {
				all.push(t.id[i], t.score[i])
			}
		}
		return all.ids(), nil
	}
	return v
}

// scanThreads is how many goroutines the shard's index splits a scan of n
// vectors over (store: from 20,000 vectors, GOMAXPROCS).
func scanThreads(n int) int {
	if n < 20000 {
		return 1
	}
	return runtime.GOMAXPROCS(0)
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
