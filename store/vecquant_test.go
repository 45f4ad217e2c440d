package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// vecGen generates the vectors of one kind of corpus and queries for it:
// "random" (unit Gaussian vectors: the exact top scores are close together,
// the hard case for a quantized scan), "clustered" (vectors around 40
// centroids, queries near a centroid: many near-ties) and "text" (signed
// feature hashing of Zipf-distributed words and their character trigrams,
// as the built-in embedder does; exact duplicates happen).
type vecGen struct {
	kind      string
	r         *rand.Rand
	dims      int
	centroids [][]float32
}

var vecKinds = []string{"random", "clustered", "text"}

func newVecGen(kind string, seed uint64, dims int) *vecGen {
	g := &vecGen{kind: kind, r: rand.New(rand.NewPCG(seed, 77)), dims: dims}
	if kind == "clustered" {
		for range 40 {
			g.centroids = append(g.centroids, randVec(g.r, dims))
		}
	}
	return g
}

// vector returns the next corpus vector.
func (g *vecGen) vector() []float32 {
	switch g.kind {
	case "clustered":
		return g.near(g.centroids[g.r.IntN(len(g.centroids))], 0.6)
	case "text":
		return hashWords(zipfText(g.r, 8+g.r.IntN(40)), g.dims)
	}
	return randVec(g.r, g.dims)
}

// query returns a query vector.
func (g *vecGen) query() []float32 {
	switch g.kind {
	case "clustered":
		return g.near(g.centroids[g.r.IntN(len(g.centroids))], 0.3)
	case "text":
		return hashWords(zipfText(g.r, 2+g.r.IntN(8)), g.dims)
	}
	return randVec(g.r, g.dims)
}

// near returns c plus Gaussian noise of about norm noise, unit length.
func (g *vecGen) near(c []float32, noise float64) []float32 {
	v := randVec(g.r, g.dims)
	for i := range v {
		v[i] = c[i] + float32(noise)*v[i]
	}
	normalizeInto(v, v)
	return v
}

// hashWords is a feature-hashing embedding of text: each word (1+ln tf) and
// each of its character trigrams (a third of that) adds its weight to a
// bucket with a sign, both from an FNV hash.
func hashWords(text string, dims int) []float32 {
	v := make([]float32, dims)
	tf := map[string]int{}
	for _, w := range strings.Fields(text) {
		tf[w]++
	}
	add := func(feature string, w float64) {
		h := fnv.New64a()
		h.Write([]byte(feature))
		x := h.Sum64()
		if x>>63 == 1 {
			w = -w
		}
		v[x%uint64(dims)] += float32(w)
	}
	for w, n := range tf {
		weight := 1 + math.Log(float64(n))
		add(w, weight)
		p := "<" + w + ">"
		for i := 0; i+3 <= len(p); i++ {
			add("#"+p[i:i+3], weight/3)
		}
	}
	return v
}

// vecRow is one stored chunk of a test corpus.
type vecRow struct {
	id, sessionKey string
	rowid          int64
	ts             time.Time
	vec            []float32
}

// fillVectors stores n chunks with vectors from g in namespace ns of s,
// over sessions of 500 chunks with 5 session keys and a minute apart, and
// returns them with their rowids. Chunk ids are 32 hex digits, as chunker
// makes them.
func fillVectors(tb testing.TB, s *Shard, g *vecGen, ns string, n int) []vecRow {
	tb.Helper()
	var rows []vecRow
	for sess := 0; sess*500 < n; sess++ {
		ref := SessionRef{Namespace: ns, SessionKey: fmt.Sprintf("key-%d", sess%5), SessionID: fmt.Sprint(sess)}
		sc := SessionChunks{Session: ref}
		for i := sess * 500; i < min(n, (sess+1)*500); i++ {
			ts := t0.Add(time.Duration(i) * time.Minute)
			sum := sha256.Sum256(fmt.Appendf(nil, "%s-%d", ns, i))
			c := Chunk{ID: hex.EncodeToString(sum[:16]), Namespace: ns, Source: "sessions", SessionKey: ref.SessionKey,
				SessionID: ref.SessionID, SeqStart: int64(i), SeqEnd: int64(i), Text: "t", TimeStart: ts, TimeEnd: ts, Vector: g.vector()}
			sc.Chunks = append(sc.Chunks, c)
			rows = append(rows, vecRow{id: c.ID, sessionKey: ref.SessionKey, ts: ts, vec: c.Vector})
		}
		mustApply(tb, s, Batch{Rechunk: []SessionChunks{sc}})
	}
	return withRowids(tb, s, rows)
}

// withRowids fills in the rowid of each row from chunks.
func withRowids(tb testing.TB, s *Shard, rows []vecRow) []vecRow {
	tb.Helper()
	ids := map[string]int64{}
	res, err := s.r.Query(`SELECT rowid, id FROM chunks`)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Close()
	for res.Next() {
		var rowid int64
		var id string
		if err := res.Scan(&rowid, &id); err != nil {
			tb.Fatal(err)
		}
		ids[id] = rowid
	}
	for i := range rows {
		rows[i].rowid = ids[rows[i].id]
	}
	return rows
}

// exactSearch is the float32 exact scan the index must agree with: unit
// vectors, the scan's dot product, ties to the lower rowid.
func exactSearch(rows []vecRow, q []float32, pass func(*vecRow) bool, limit int) []Candidate {
	unit, v := make([]float32, len(q)), make([]float32, len(q))
	normalizeInto(unit, q)
	var all []scored
	for i := range rows {
		if pass != nil && !pass(&rows[i]) {
			continue
		}
		normalizeInto(v, rows[i].vec)
		all = append(all, scored{score: dot(unit, v), pos: int32(i), rowid: rows[i].rowid})
	}
	sort.Slice(all, func(i, j int) bool { return better(all[i], all[j]) })
	out := make([]Candidate, 0, limit)
	for i, it := range all[:min(limit, len(all))] {
		out = append(out, Candidate{ID: rows[it.pos].id, Row: it.rowid, Score: clamp01(float64(it.score)), Rank: i + 1})
	}
	return out
}

// recall is the share of want's ids that got holds.
func recall(got, want []Candidate) float64 {
	if len(want) == 0 {
		return 1
	}
	n := 0
	for _, w := range want {
		if slices.ContainsFunc(got, func(c Candidate) bool { return c.ID == w.ID }) {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

// TestQuantizedSearchMatchesExact checks VectorSearch against an exact
// float32 scan on each kind of corpus, in both vector modes: recall@10 and
// recall@40 (the query engine's usual depth) at least 0.99, and every
// reported score the exact cosine of its chunk.
func TestQuantizedSearchMatchesExact(t *testing.T) {
	const dims, n, queries = 64, 4000, 40
	for _, mode := range []struct {
		name string
		cfg  Config
	}{
		{VectorModeSqliteVec, Config{Dims: dims, VectorCopyBytes: -1}}, // every candidate read from SQLite
		{VectorModeGoScan, Config{Dims: dims, NoSqliteVec: true, VectorCopyBytes: -1}},
		{VectorModeSqliteVec + "+copies", Config{Dims: dims}},
	} {
		for ki, kind := range vecKinds {
			t.Run(mode.name+"/"+kind, func(t *testing.T) {
				ctx := context.Background()
				s := openTestConfig(t, mode.cfg)
				g := newVecGen(kind, uint64(ki+1), dims)
				rows := fillVectors(t, s, g, "n", n)
				byID := map[string]*vecRow{}
				for i := range rows {
					byID[rows[i].id] = &rows[i]
				}
				for _, k := range []int{10, 40} {
					var sum float64
					for range queries {
						q := g.query()
						got, err := s.VectorSearch(ctx, "n", q, Filter{}, k)
						if err != nil {
							t.Fatal(err)
						}
						want := exactSearch(rows, q, nil, k)
						if len(got) != len(want) {
							t.Fatalf("k=%d: %d hits, want %d", k, len(got), len(want))
						}
						sum += recall(got, want)
						for _, c := range got {
							if e := exactSearch([]vecRow{*byID[c.ID]}, q, nil, 1)[0].Score; c.Score != e {
								t.Fatalf("k=%d: %s scored %v, exact cosine %v", k, c.ID, c.Score, e)
							}
						}
					}
					if r := sum / queries; r < 0.99 {
						t.Errorf("k=%d: recall %.4f, want >= 0.99", k, r)
					} else {
						t.Logf("k=%d: recall %.4f", k, r)
					}
				}
			})
		}
	}
}

// openTestConfig is openTest with a whole Config.
func openTestConfig(tb testing.TB, cfg Config) *Shard {
	tb.Helper()
	s, err := Open(context.Background(), tb.TempDir()+"/shard.db", cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// TestQuantizedSearchFilters checks that filtered searches return exactly
// what an exact scan over the passing chunks returns, ranks and scores.
func TestQuantizedSearchFilters(t *testing.T) {
	const dims, n = 48, 3000
	ctx := context.Background()
	s := openTest(t, dims)
	g := newVecGen("clustered", 9, dims)
	rows := fillVectors(t, s, g, "n", n)
	fillVectors(t, s, newVecGen("clustered", 9, dims), "other", 600) // the same vectors, another namespace
	after, before := t0.Add(400*time.Minute), t0.Add(2500*time.Minute)
	cases := []struct {
		name string
		f    Filter
		pass func(*vecRow) bool
	}{
		{"session key", Filter{SessionKey: "key-2"}, func(r *vecRow) bool { return r.sessionKey == "key-2" }},
		{"time window", Filter{After: after, Before: before}, func(r *vecRow) bool { return !r.ts.Before(after) && r.ts.Before(before) }},
		{"key and window", Filter{SessionKey: "key-1", After: after, Before: before},
			func(r *vecRow) bool { return r.sessionKey == "key-1" && !r.ts.Before(after) && r.ts.Before(before) }},
		{"no match", Filter{SessionKey: "key-9"}, func(r *vecRow) bool { return false }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 20 {
				q := g.query()
				got, err := s.VectorSearch(ctx, "n", q, c.f, 25)
				if err != nil {
					t.Fatal(err)
				}
				if want := exactSearch(rows, q, c.pass, 25); !slices.Equal(got, want) {
					t.Fatalf("VectorSearch()=%v\nwant %v", got, want)
				}
			}
		})
	}
}

// TestQuantizedIndexInStep checks that adds, replaced vectors (SetVectors),
// deleted sessions and a reopen keep the int8 codes equal to the codes of
// the float32 vectors SQLite holds, and searches equal to an exact scan.
func TestQuantizedIndexInStep(t *testing.T) {
	const dims = 32
	ctx := context.Background()
	path := t.TempDir() + "/shard.db"
	s, err := Open(ctx, path, Config{Dims: dims})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close(ctx) }()
	g := newVecGen("random", 3, dims)
	rows := fillVectors(t, s, g, "n", 1700) // four sessions, the last of 200
	// Replace every third vector, delete session 1.
	var cv []ChunkVector
	for i := range rows {
		if i%3 == 0 {
			rows[i].vec = g.vector()
			cv = append(cv, ChunkVector{ID: rows[i].id, Row: rows[i].rowid, Vector: rows[i].vec})
		}
	}
	if _, err := setVectorsByID(t, s, cv); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, Batch{DeleteSessions: []SessionRef{{Namespace: "n", SessionKey: "key-1", SessionID: "1"}}})
	rows = slices.DeleteFunc(rows, func(r vecRow) bool { return r.sessionKey == "key-1" })
	check := func(when string) {
		t.Helper()
		stored := map[int64][]float32{}
		if err := s.scanVec0Shadow(ctx, s.r, func(rowid int64, blob []byte) error {
			v, err := decodeVector(nil, blob)
			stored[rowid] = v
			return err
		}); err != nil {
			t.Fatal(err)
		}
		s.index.mu.RLock()
		sp := s.index.spaces["n"]
		if len(sp.rowids) != len(rows) || len(stored) != len(rows) {
			t.Fatalf("%s: index %d vectors, SQLite %d, want %d", when, len(sp.rowids), len(stored), len(rows))
		}
		for i, rowid := range sp.rowids {
			codes := make([]int8, dims)
			scale := quantizeInto(codes, stored[rowid])
			if !slices.Equal(sp.vec(i, dims), codes) || sp.scales[i] != scale {
				t.Fatalf("%s: rowid %d: codes %v scale %v, SQLite's vector gives %v %v", when, rowid, sp.vec(i, dims), sp.scales[i], codes, scale)
			}
		}
		if s.index.exactOff || len(s.index.exact) != len(rows) {
			t.Fatalf("%s: %d float32 copies (off %t), want one a vector: %d", when, len(s.index.exact), s.index.exactOff, len(rows))
		}
		for rowid, v := range stored {
			u := make([]float32, dims)
			normalizeInto(u, v)
			slot, ok := s.index.exact[rowid]
			if !ok {
				t.Fatalf("%s: rowid %d has no float32 copy", when, rowid)
			}
			if !slices.Equal(s.index.exactAt(slot), u) {
				t.Fatalf("%s: rowid %d: float32 copy %v, SQLite's unit vector %v", when, rowid, s.index.exactAt(slot), u)
			}
		}
		s.index.mu.RUnlock()
		for range 10 {
			q := g.query()
			got, err := s.VectorSearch(ctx, "n", q, Filter{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if want := exactSearch(rows, q, nil, 10); !slices.Equal(got, want) {
				t.Fatalf("%s: VectorSearch()=%v\nwant %v", when, got, want)
			}
		}
	}
	check("after changes")
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, path, Config{Dims: dims}); err != nil {
		t.Fatal(err)
	}
	check("after reopen")
}

// TestQuantizeBounds checks the codes of quantizeInto: in [-127, 127], the
// largest component at ±127, every component within half a step of the
// unit vector, and zero vectors as zero codes with scale 0.
func TestQuantizeBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dims := range []int{1, 7, 64, 384} {
		for range 50 {
			v := randVec(r, dims)
			for i := range v {
				v[i] *= 3.5 // not unit length
			}
			codes := make([]int8, dims)
			s := quantizeInto(codes, v)
			unit := make([]float32, dims)
			normalizeInto(unit, v)
			top := 0
			for i, c := range codes {
				if c == -128 {
					t.Fatalf("dims %d: code -128", dims)
				}
				top = max(top, int(c), -int(c))
				if d := math.Abs(float64(unit[i]) - float64(s)*float64(c)); d > float64(s)/2*1.0001 {
					t.Fatalf("dims %d: component %d off by %v, step %v", dims, i, d, s)
				}
			}
			if top != quantMax {
				t.Fatalf("dims %d: largest code %d, want %d", dims, top, quantMax)
			}
		}
	}
	codes := []int8{1, 2, 3}
	if s := quantizeInto(codes, make([]float32, 3)); s != 0 || !slices.Equal(codes, []int8{0, 0, 0}) {
		t.Errorf("zero vector: codes %v scale %v, want zeros and 0", codes, s)
	}
}

// quantizeThreePasses is quantizeInto as it was written first: the unit
// vector's largest component found over every component, math.Round.
func quantizeThreePasses(dst []int8, v []float32) float32 {
	var ss float64
	for _, f := range v {
		ss += float64(f) * float64(f)
	}
	if ss == 0 {
		clear(dst)
		return 0
	}
	inv := 1 / math.Sqrt(ss)
	var m float32
	for _, f := range v {
		m = max(m, abs32(float32(float64(f)*inv)))
	}
	if m == 0 {
		clear(dst)
		return 0
	}
	scale := m / quantMax
	k := quantMax / m
	for i, f := range v {
		c := math.Round(float64(float32(float64(f)*inv) * k))
		dst[i] = int8(min(max(c, -quantMax), quantMax))
	}
	return scale
}

// TestQuantizeMatchesThreePasses: quantizeInto gives the codes and scale
// of the three-pass version, bit for bit, on the generated kinds, on
// vectors built so that codes fall on halves (where the rounding
// direction shows), on tiny and huge magnitudes and on ties for the
// largest component.
func TestQuantizeMatchesThreePasses(t *testing.T) {
	var vs [][]float32
	for _, kind := range vecKinds {
		g := newVecGen(kind, 5, 384)
		for range 300 {
			vs = append(vs, g.vector())
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		v := make([]float32, 1+r.IntN(64))
		for i := range v { // codes on halves: components k/2 of the largest, 127 steps
			v[i] = float32(r.IntN(255)-127) / 2
		}
		v[r.IntN(len(v))] = 127.0 / 2 * float32(1-2*r.IntN(2))
		vs = append(vs, v)
	}
	for _, f := range []float32{1e-30, 1e-20, 1e20, 3e38} {
		vs = append(vs, []float32{f, -f / 2, f / 3, -f})
	}
	vs = append(vs, []float32{-2, 2, 1, 0.5}, []float32{0, 0, -1e-45}, []float32{1})
	halves := 0
	for n, v := range vs {
		got, want := make([]int8, len(v)), make([]int8, len(v))
		gs, ws := quantizeInto(got, v), quantizeThreePasses(want, v)
		if math.Float32bits(gs) != math.Float32bits(ws) || !slices.Equal(got, want) {
			t.Fatalf("vector %d %v:\n got %v scale %v\nwant %v scale %v", n, v, got, gs, want, ws)
		}
		unit := make([]float32, len(v))
		normalizeInto(unit, v)
		for i := range v {
			if ws != 0 {
				if x := float64(unit[i] * (quantMax / (ws * quantMax))); x-math.Trunc(x) == 0.5 || x-math.Trunc(x) == -0.5 {
					halves++
				}
			}
		}
	}
	if halves == 0 {
		t.Fatal("no component fell on a half: the rounding direction was not tested")
	}
	t.Logf("%d vectors, %d components on a half", len(vs), halves)
}

// TestErrMarginHolds checks, over many random pairs, that the approximate
// score is within errMargin of the exact one (the bound rescoring relies on)
// and that the margin is not so wide that rescoring would read everything.
func TestErrMarginHolds(t *testing.T) {
	const dims = 384
	for _, kind := range vecKinds {
		g := newVecGen(kind, 11, dims)
		var worst, mean float64
		const pairs = 20000
		for range pairs {
			q := newQuantQuery(g.query())
			v := g.vector()
			codes := make([]int8, dims)
			s := quantizeInto(codes, v)
			unit := make([]float32, dims)
			normalizeInto(unit, v)
			err := math.Abs(float64(q.approx(codes, s) - dot(q.unit, unit)))
			m := float64(errMargin(s, q.scale))
			if err > m {
				t.Fatalf("%s: approximation off by %v, margin %v", kind, err, m)
			}
			worst = max(worst, err/m)
			mean += m / pairs
		}
		if mean > 0.02 {
			t.Errorf("%s: mean margin %v, want below 0.02", kind, mean)
		}
		t.Logf("%s: worst error %.2f of the margin, mean margin %.4f", kind, worst, mean)
	}
}

// TestQuantizedSearchDuplicates stores one vector 400 times among random
// ones and searches for it: the answer is the exact scan's (the copies of
// lowest rowid, at the exact score), and the search reads no more than its
// pool of float32 vectors however many copies tie.
func TestQuantizedSearchDuplicates(t *testing.T) {
	const dims = 48
	ctx := context.Background()
	s := openTest(t, dims)
	g := newVecGen("random", 5, dims)
	dup := g.vector()
	var rows []vecRow
	ref := SessionRef{Namespace: "n", SessionKey: "k", SessionID: "s"}
	sc := SessionChunks{Session: ref}
	for i := range 2400 {
		v := g.vector()
		if i%6 == 0 {
			v = dup
		}
		c := Chunk{ID: fmt.Sprintf("n-%d", i), Namespace: "n", Source: "sessions", SessionKey: "k", SessionID: "s",
			SeqStart: int64(i), SeqEnd: int64(i), Text: "t", TimeStart: t0, TimeEnd: t0, Vector: v}
		sc.Chunks = append(sc.Chunks, c)
		rows = append(rows, vecRow{id: c.ID, sessionKey: "k", ts: t0, vec: v})
	}
	mustApply(t, s, Batch{Rechunk: []SessionChunks{sc}})
	rows = withRowids(t, s, rows)
	for _, k := range []int{10, 40} {
		got, read, err := s.vectorSearch(ctx, "n", newQuantQuery(dup), compileFilter(Filter{}), k, k)
		if err != nil {
			t.Fatal(err)
		}
		if want := exactSearch(rows, dup, nil, k); !slices.Equal(got, want) {
			t.Fatalf("k=%d: VectorSearch()=%v\nwant %v", k, got, want)
		}
		if read > rescorePool(k) {
			t.Errorf("k=%d: read %d vectors, want at most the pool of %d", k, read, rescorePool(k))
		}
	}
}

// TestPerVectorScaleBeatsPerDimension is the measurement behind the choice
// of one scale a vector: on each kind of corpus, the RMS error of the
// approximate cosine (float query, so only the stored vector's rounding
// counts) is lower with a per-vector scale than with a per-dimension one
// (each dimension's largest magnitude over the corpus, the scale an index
// would have to fix up front). go test -run PerVector -v logs the figures.
func TestPerVectorScaleBeatsPerDimension(t *testing.T) {
	const dims, n, pairs = 384, 5000, 2000
	for _, kind := range vecKinds {
		g := newVecGen(kind, 3, dims)
		vs := make([][]float32, n)
		dmax := make([]float64, dims)
		for i := range vs {
			v := g.vector()
			normalizeInto(v, v)
			vs[i] = v
			for d, f := range v {
				dmax[d] = math.Max(dmax[d], math.Abs(float64(f)))
			}
		}
		var perVec, perDim, withQuery float64
		codes := make([]int8, dims)
		for i := range pairs {
			q := newQuantQuery(g.query())
			v := vs[i]
			exact := float64(dot(q.unit, v))
			s := quantizeInto(codes, v)
			var a, b float64
			for d := range v {
				a += float64(q.unit[d]) * float64(s) * float64(codes[d])
				sd := dmax[d] / quantMax
				b += float64(q.unit[d]) * sd * math.Max(-quantMax, math.Min(quantMax, math.Round(float64(v[d])/sd)))
			}
			perVec += (a - exact) * (a - exact) / pairs
			perDim += (b - exact) * (b - exact) / pairs
			e := float64(q.approx(codes, s)) - exact
			withQuery += e * e / pairs
		}
		t.Logf("%s: RMS error per-vector scale %.5f, per-dimension %.5f; per-vector with the int8 query (the scan) %.5f",
			kind, math.Sqrt(perVec), math.Sqrt(perDim), math.Sqrt(withQuery))
		if perVec >= perDim {
			t.Errorf("%s: per-vector RMS %.5f, per-dimension %.5f: want per-vector lower", kind, math.Sqrt(perVec), math.Sqrt(perDim))
		}
	}
}

// TestInt8PoolBeatsBinary is the measurement behind int8 rather than one
// bit a dimension: with the same pool of candidates to rescore (74, the
// pool of a top 10), the share of the exact top 10 that a binary (sign,
// Hamming distance) scan puts in the pool is far lower than the int8
// scan's, on every kind of corpus. go test -run Int8Pool -v logs it.
func TestInt8PoolBeatsBinary(t *testing.T) {
	const dims, n, queries, k = 384, 5000, 30, 10
	pool := rescorePool(k)
	for _, kind := range vecKinds {
		g := newVecGen(kind, 4, dims)
		rows := make([]vecRow, n)
		signs := make([][dims / 64]uint64, n)
		codes := make([][]int8, n)
		scales := make([]float32, n)
		for i := range rows {
			rows[i] = vecRow{id: fmt.Sprint(i), rowid: int64(i + 1), vec: g.vector()}
			codes[i] = make([]int8, dims)
			scales[i] = quantizeInto(codes[i], rows[i].vec)
			for d, f := range rows[i].vec {
				if f > 0 {
					signs[i][d/64] |= 1 << (d % 64)
				}
			}
		}
		var inInt8, inBinary int
		for range queries {
			qv := g.query()
			q := newQuantQuery(qv)
			var qb [dims / 64]uint64
			for d, f := range q.unit {
				if f > 0 {
					qb[d/64] |= 1 << (d % 64)
				}
			}
			byInt8, byBits := topK{limit: pool}, topK{limit: pool}
			for i := range rows {
				byInt8.push(scored{score: q.approx(codes[i], scales[i]), pos: int32(i), rowid: rows[i].rowid})
				same := 0
				for w := range qb {
					same += 64 - bits.OnesCount64(qb[w]^signs[i][w])
				}
				byBits.push(scored{score: float32(same), pos: int32(i), rowid: rows[i].rowid})
			}
			for _, c := range exactSearch(rows, qv, nil, k) {
				has := func(h topK) bool {
					return slices.ContainsFunc(h.items, func(s scored) bool { return rows[s.pos].id == c.ID })
				}
				if has(byInt8) {
					inInt8++
				}
				if has(byBits) {
					inBinary++
				}
			}
		}
		ri, rb := float64(inInt8)/(queries*k), float64(inBinary)/(queries*k)
		t.Logf("%s: exact top %d within a pool of %d: int8 %.3f, binary %.3f", kind, k, pool, ri, rb)
		if ri < 0.99 || rb >= ri {
			t.Errorf("%s: int8 pool recall %.3f, binary %.3f: want int8 >= 0.99 and above binary", kind, ri, rb)
		}
	}
}

// TestExactCopiesBounded: a shard whose float32 copies would pass
// Config.VectorCopyBytes drops them all, counts none in its index bytes, and answers
// from SQLite reads with the exact scan's results; reopened under the bound
// it keeps them again.
func TestExactCopiesBounded(t *testing.T) {
	const dims = 32
	ctx := context.Background()
	path := t.TempDir() + "/shard.db"
	s, err := Open(ctx, path, Config{Dims: dims, VectorCopyBytes: 100 * exactEntryBytes(dims)})
	if err != nil {
		t.Fatal(err)
	}
	g := newVecGen("random", 5, dims)
	byNS := map[string][]vecRow{"n": fillVectors(t, s, g, "n", 90)}
	s.index.mu.RLock()
	held, off := len(s.index.exact), s.index.exactOff
	s.index.mu.RUnlock()
	if held != 90 || off {
		t.Fatalf("90 vectors under a bound of 100: %d copies (off %t), want 90", held, off)
	}
	byNS["m"] = fillVectors(t, s, g, "m", 30)
	s.index.mu.RLock()
	held, off, bytes := len(s.index.exact), s.index.exactOff, s.index.exactBytes
	s.index.mu.RUnlock()
	if held != 0 || !off || bytes != 0 {
		t.Fatalf("120 vectors over a bound of 100: %d copies, off %t, %d bytes; want none, off, 0", held, off, bytes)
	}
	for ns, in := range byNS {
		for range 5 {
			q := g.query()
			got, err := s.VectorSearch(ctx, ns, q, Filter{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if want := exactSearch(in, q, nil, 10); !slices.Equal(got, want) {
				t.Fatalf("%s: VectorSearch()=%v\nwant %v", ns, got, want)
			}
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, path, Config{Dims: dims, VectorCopyBytes: 200 * exactEntryBytes(dims)}); err != nil {
		t.Fatal(err)
	}
	s.index.mu.RLock()
	held, off = len(s.index.exact), s.index.exactOff
	s.index.mu.RUnlock()
	if held != 120 || off {
		t.Fatalf("reopened under a bound of 200: %d copies (off %t), want 120", held, off)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Reopened over the bound: off from the start, no copies built at Open.
	if s, err = Open(ctx, path, Config{Dims: dims, VectorCopyBytes: 100 * exactEntryBytes(dims)}); err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	s.index.mu.RLock()
	held, off, bytes = len(s.index.exact), s.index.exactOff, s.index.exactBytes
	s.index.mu.RUnlock()
	if held != 0 || !off || bytes != 0 {
		t.Fatalf("reopened over a bound of 100: %d copies, off %t, %d bytes; want none, off, 0", held, off, bytes)
	}
}

// TestVectorSearchTopExactHead checks VectorSearchTop on each kind of
// corpus: its first exact candidates are the exact scan's top (recall at
// least 0.99, each scored with its exact cosine), the rest up to limit
// follow in descending score within the quantization error of their exact
// cosine and without repeats; it reads at most half the float32 vectors
// from SQLite that a search exact to the limit reads; and asked exact to the limit it is
// VectorSearch.
func TestVectorSearchTopExactHead(t *testing.T) {
	const dims, n, queries, limit, head = 64, 4000, 40, 40, 10
	for ki, kind := range vecKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			s := openTestConfig(t, Config{Dims: dims, VectorCopyBytes: -1})
			g := newVecGen(kind, uint64(ki+11), dims)
			rows := fillVectors(t, s, g, "n", n)
			byID := map[string]*vecRow{}
			for i := range rows {
				byID[rows[i].id] = &rows[i]
			}
			var sum float64
			var readTop, readAll int
			for range queries {
				q := g.query()
				got, read, err := s.vectorSearch(ctx, "n", newQuantQuery(q), compileFilter(Filter{}), limit, head)
				if err != nil {
					t.Fatal(err)
				}
				all, readL, err := s.vectorSearch(ctx, "n", newQuantQuery(q), compileFilter(Filter{}), limit, limit)
				if err != nil {
					t.Fatal(err)
				}
				readTop, readAll = readTop+read, readAll+readL
				if len(got) != limit {
					t.Fatalf("%d candidates, want %d", len(got), limit)
				}
				sum += recall(got[:head], exactSearch(rows, q, nil, head))
				seen := map[string]bool{}
				for i, c := range got {
					e := exactSearch([]vecRow{*byID[c.ID]}, q, nil, 1)[0].Score
					switch {
					case seen[c.ID]:
						t.Fatalf("%s twice", c.ID)
					case c.Rank != i+1:
						t.Fatalf("candidate %d has rank %d", i, c.Rank)
					case i > 0 && c.Score > got[i-1].Score:
						t.Fatalf("rank %d scores %v above rank %d's %v", i+1, c.Score, i, got[i-1].Score)
					case i < head && c.Score != e:
						t.Fatalf("rank %d (%s) scored %v, exact cosine %v", i+1, c.ID, c.Score, e)
					case math.Abs(c.Score-e) > 0.02:
						t.Fatalf("rank %d (%s) scored %v, exact cosine %v: beyond the quantization error", i+1, c.ID, c.Score, e)
					}
					seen[c.ID] = true
				}
				if same, err := s.VectorSearchTop(ctx, "n", q, Filter{}, limit, limit); err != nil || !slices.Equal(same, all) {
					t.Fatalf("VectorSearchTop(limit, limit) = %v, %v\nVectorSearch = %v", same, err, all)
				}
			}
			if r := sum / queries; r < 0.99 {
				t.Errorf("recall of the exact head %.4f, want >= 0.99", r)
			}
			if 2*readTop > readAll { // about head + 3 against limit + 8 a search
				t.Errorf("read %d float32 vectors for exact heads of %d against %d exact to %d: want at most half", readTop, head, readAll, limit)
			}
			t.Logf("vectors read a search: %.1f exact to %d, %.1f exact to %d", float64(readTop)/queries, head, float64(readAll)/queries, limit)
		})
	}
}

// TestExactCopiesReuseSlots puts, removes and puts again float32 copies
// directly: every rowid keeps its own unit vector however slots are
// given back and handed out again, a removal's slot is used before a new
// block is taken, and the cost falls with each removal.
func TestExactCopiesReuseSlots(t *testing.T) {
	const dims = 8
	x := newVectorIndex(dims, 0)
	r := rand.New(rand.NewPCG(21, 22))
	want := map[int64][]float32{}
	put := func(rowid int64) {
		v := randVec(r, dims)
		x.putExact(rowid, v)
		u := make([]float32, dims)
		normalizeInto(u, v)
		want[rowid] = u
	}
	check := func(when string) {
		t.Helper()
		if len(x.exact) != len(want) {
			t.Fatalf("%s: %d copies, want %d", when, len(x.exact), len(want))
		}
		for rowid, u := range want {
			slot, ok := x.exact[rowid]
			if !ok || !slices.Equal(x.exactAt(slot), u) {
				t.Fatalf("%s: rowid %d: copy %v (held %t), want %v", when, rowid, x.exactAt(slot), ok, u)
			}
		}
		if got := exactEntryBytes(dims) * int64(len(want)); x.exactBytes != got {
			t.Fatalf("%s: copies cost %d bytes, want %d", when, x.exactBytes, got)
		}
	}
	for rowid := range int64(2 * exactBlock) {
		put(rowid)
	}
	check("after the first two blocks")
	for rowid := int64(0); rowid < 2*exactBlock; rowid += 3 {
		x.delExact(rowid)
		delete(want, rowid)
	}
	check("after removals")
	freed := len(x.exactFree)
	for i := range freed {
		put(int64(1000 + i))
	}
	check("after as many puts as removals")
	if len(x.exactSlab) != 2 || len(x.exactFree) != 0 {
		t.Fatalf("%d blocks and %d free slots after reusing %d, want 2 and 0", len(x.exactSlab), len(x.exactFree), freed)
	}
	put(5000)
	check("after one more")
	if len(x.exactSlab) != 3 {
		t.Fatalf("%d blocks after the first two filled up, want 3", len(x.exactSlab))
	}
	for rowid := range want {
		put(rowid) // a new vector in the same slot
	}
	check("after replacing every copy")
}
