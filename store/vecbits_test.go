package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestRotationKeepsNorms: the sketch's rotation is orthonormal (it keeps
// lengths and inner products), so its estimates are of the true cosine,
// and its SIMD butterflies match the generic ones.
func TestRotationKeepsNorms(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dims := range []int{3, 64, 100, 384, 768} {
		rot := rotationFor(dims)
		a, b := randVec(r, dims), randVec(r, dims)
		ra, rb := make([]float32, rot.d), make([]float32, rot.d)
		rot.rotate(ra, a)
		rot.rotate(rb, b)
		if got, want := dotGeneric(ra, rb), dotGeneric(a, b); math.Abs(float64(got-want)) > 1e-4 {
			t.Errorf("dims %d: <Ra,Rb> = %v, <a,b> = %v", dims, got, want)
		}
		if got := dotGeneric(ra, ra); math.Abs(float64(got)-1) > 1e-4 {
			t.Errorf("dims %d: |Ra|² = %v, want 1", dims, got)
		}
		// The butterflies in use (AVX2 where built and supported) are the
		// generic loop's, to the bit.
		x := randVec(r, rot.d)
		y := slices.Clone(x)
		whtFrom8(x, 0.5)
		whtFrom8Generic(y, 0.5)
		if !slices.Equal(x, y) {
			t.Errorf("dims %d: whtFrom8 differs from whtFrom8Generic", dims)
		}
	}
}

// TestBitEstimateTracksCosine: the sketch's estimate is close to the
// cosine on random vectors (its error shrinks with dims as 1/√dims), and
// is 0 for a zero vector.
func TestBitEstimateTracksCosine(t *testing.T) {
	const dims = 384
	r := rand.New(rand.NewPCG(3, 4))
	rot := rotationFor(dims)
	scratch := make([]float32, 2*rot.d)
	var sq float64
	const n = 2000
	for range n {
		q := randVec(r, dims)
		v := randVec(r, dims)
		// Mix in the query so cosines spread over [-1, 1].
		w := r.Float32()*2 - 1
		for i := range v {
			v[i] = w*q[i] + (1-abs32(w))*v[i]
		}
		unit := make([]float32, dims)
		normalizeInto(unit, q)
		bits := make([]uint64, rot.words)
		pop, inv := rot.sketchInto(bits, v, scratch)
		bq := newBitQuery(rot, unit)
		vu := make([]float32, dims)
		normalizeInto(vu, v)
		e := float64(bq.estimate(bits, pop, inv) - dotGeneric(unit, vu))
		sq += e * e
	}
	if rms := math.Sqrt(sq / n); rms > 0.06 {
		t.Errorf("rms error of the estimate %.4f, want <= 0.06", rms)
	} else {
		t.Logf("rms error of the estimate over %d pairs: %.4f", n, rms)
	}
	bits := make([]uint64, rot.words)
	zero := make([]float32, dims)
	pop, inv := rot.sketchInto(bits, zero, scratch)
	unit := make([]float32, dims)
	normalizeInto(unit, randVec(r, dims))
	if e := newBitQuery(rot, unit).estimate(bits, pop, inv); inv != 0 || e != 0 {
		t.Errorf("zero vector: inverse L1 %v, estimate %v, want 0 and 0", inv, e)
	}
}

// TestBitSketchRecall: on every generated corpus kind, the candidates the
// sketch passes to the int8 stage hold the exact top 10 as often as the
// int8 scan of the whole namespace finds them (recall@10 of the search's
// candidate pool >= 0.99), after a tenth of the vectors were removed and
// added again (positions move). Measured once with 40 queries at 150,000
// vectors (bitsMin until 2026-12-07): 0.9975 on random vectors, 1.000 on
// clustered and text; with the same fraction of 20,000 random vectors (a
// pool of 887), 0.9875. With bitsMin 50,000 (since 2026-12-07): 1.000
// on random vectors at 50,000 and on clustered and text at 20,000. The
// smallest pool a namespace's fraction gets is at the largest namespaces,
// which the benchmarks measure (BENCHMARKS.md: recall@10 0.9957 on random
// vectors at 1,000,000, BenchmarkQuantizedVectorSearch).
func TestBitSketchRecall(t *testing.T) {
	const dims, k, queries = 384, 10, 12
	pool := rescorePool(4 * k)
	for _, kind := range vecKinds {
		// Random vectors, the hard case (the top scores close together),
		// at bitsMin, the smallest namespace the sketch is used for, with
		// the pool a search takes there; the others at 20,000 vectors with
		// a pool of the same fraction of the namespace.
		n, want := bitsMin, bitsPool(bitsMin, pool)
		if kind != "random" {
			n, want = 20000, bitsPool(bitsMin, pool)*20000/bitsMin
		}
		t.Run(kind, func(t *testing.T) {
			g := newVecGen(kind, 9, dims)
			x := newVectorIndex(dims, -1)
			rows := make([]vecRow, n)
			ops := make([]indexOp, n)
			for i := range rows {
				rows[i] = vecRow{id: fmt.Sprint(i), rowid: int64(i + 1), vec: g.vector()}
				ops[i] = indexOp{add: true, ns: "ns", rowid: rows[i].rowid, entry: vecEntry{id: rows[i].id, vec: rows[i].vec}}
			}
			x.apply(ops)
			if sp := x.spaces["ns"]; !sp.sketched { // below bitsMin
				sp.buildSketches(dims)
			}
			units := make([][]float32, n)
			for i := range rows {
				units[i] = make([]float32, dims)
				normalizeInto(units[i], rows[i].vec)
			}
			// Remove and re-add a tenth, so positions move (swap-remove).
			var churn []indexOp
			for i := 0; i < n; i += 10 {
				churn = append(churn, indexOp{ns: "ns", rowid: rows[i].rowid})
			}
			for i := 0; i < n; i += 10 {
				churn = append(churn, ops[i])
			}
			x.apply(churn)
			sp := x.spaces["ns"]
			var inSketch, inInt8 int
			none := compileFilter(Filter{})
			for range queries {
				qv := g.query()
				q := newQuantQuery(qv)
				got := sp.scanSketch(q, rotationFor(dims), n, pool, want, 2, dims)
				full := sp.scan(q, &none, 0, n, pool, dims)
				exact := topK{limit: k}
				for i, u := range units {
					exact.push(scored{score: dotGeneric(q.unit, u), pos: int32(i), rowid: rows[i].rowid})
				}
				for _, c := range exact.items {
					has := func(h topK) bool {
						return slices.ContainsFunc(h.items, func(s scored) bool { return sp.rowids[s.pos] == c.rowid })
					}
					if has(got) {
						inSketch++
					}
					if has(full) {
						inInt8++
					}
				}
			}
			rs, ri := float64(inSketch)/(queries*k), float64(inInt8)/(queries*k)
			t.Logf("%s, %d vectors: exact top %d within the pool of %d: through the sketch %.4f, int8 scan %.4f", kind, n, k, pool, rs, ri)
			if rs < 0.99 || rs < ri-0.005 {
				t.Errorf("%s: recall through the sketch %.4f, int8 scan %.4f: want >= 0.99 and within 0.005 of the scan", kind, rs, ri)
			}
		})
	}
}

// TestBitCountsMatchGeneric checks the bit counts in use (AVX2 where built
// and supported) against the generic loop and against the four bit-planes
// of the sketch made afresh from each vector's codes (so also the
// interleaved layout: what is stored for a position is read back for it),
// for sketches of one, eight and sixteen words and runs that start and
// end inside a group and a block.
func TestBitCountsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, dims := range []int{40, 384, 1000} {
		rot := rotationFor(dims)
		sp, q := sketchedSpace(r, dims, blockVecs+300)
		scratch, v := make([]float32, 2*rot.d), make([]float32, dims)
		for _, run := range [][2]int{{0, bitsRun}, {7, bitsRun}, {33, 5}, {blockVecs - 100, 100}, {blockVecs, bitsRun}, {blockVecs + 250, 50}} {
			lo, n := run[0], run[1]
			got, want := make([]int32, n), make([]int32, n)
			bitCounts(q, sp, lo, rot.words, got)
			bitCountsGeneric(q, sp, lo, rot.words, want)
			if !slices.Equal(got, want) {
				t.Fatalf("dims %d (%d words), run of %d at %d: counts differ from the generic loop", dims, rot.words, n, lo)
			}
			for j := range n {
				for k, c := range sp.vec(lo+j, dims) {
					v[k] = float32(c)
				}
				fresh := make([]uint64, rot.words)
				pop, inv := rot.sketchInto(fresh, v, scratch)
				if c := q.count(fresh); got[j] != c {
					t.Fatalf("dims %d, position %d: count %d, of the sketch made afresh %d", dims, lo+j, got[j], c)
				}
				if e, w := q.estimate(fresh, pop, inv), q.fromCount(got[j], sp.bitPopInv[lo+j], sp.bitInv[lo+j]); e != w {
					t.Fatalf("dims %d, position %d: estimate of the sketch made afresh %v, from the counts and stored norms %v", dims, lo+j, e, w)
				}
			}
		}
	}
}

// TestBitsScreenMatchesGeneric checks the screen in use (AVX2 where built
// and supported) against the scalar one on runs of whole eights and with
// a tail, at thresholds from below every estimate to above every one: the
// two agree on every position but those whose estimate is within rounding
// of the threshold, and the hits are ascending indexes into the run.
func TestBitsScreenMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const dims = 384
	rot := rotationFor(dims)
	sp, q := sketchedSpace(r, dims, bitsRun+40)
	for _, run := range [][2]int{{0, bitsRun}, {bitsRun, 40}, {3, 13}, {5, 7}} {
		lo, n := run[0], run[1]
		counts := make([]int32, n)
		bitCounts(q, sp, lo, rot.words, counts)
		popInv, inv := sp.bitPopInv[lo:lo+n], sp.bitInv[lo:lo+n]
		est := make([]float32, n)
		for j, c := range counts {
			est[j] = q.fromCount(c, popInv[j], inv[j])
		}
		sorted := slices.Sorted(slices.Values(est))
		lows := []float32{sorted[0] - 1, sorted[n/2], sorted[n-1], sorted[n-1] + 1}
		for _, low := range lows {
			hits, want := make([]int32, n), make([]int32, n)
			hits = hits[:bitsScreen(q, counts, popInv, inv, low, hits)]
			want = want[:bitsScreenGeneric(q, counts, popInv, inv, low, want)]
			in := func(s []int32, j int) bool { _, ok := slices.BinarySearch(s, int32(j)); return ok }
			if !slices.IsSorted(hits) {
				t.Fatalf("run of %d at %d, low %v: hits not ascending: %v", n, lo, low, hits)
			}
			for j, e := range est {
				if in(hits, j) != in(want, j) && math.Abs(float64(e-low)) > 1e-5 {
					t.Fatalf("run of %d at %d, low %v: position %d (estimate %v) in the screen %v, in the scalar one %v", n, lo, low, j, e, in(hits, j), in(want, j))
				}
			}
			if low < sorted[0] && len(hits) != n || low > sorted[n-1] && len(hits) != 0 {
				t.Fatalf("run of %d at %d, low %v: %d hits", n, lo, low, len(hits))
			}
		}
	}
}

// TestVectorSearchThroughSketch: a namespace past bitsMin (lowered here,
// so that the sketch passes on about half of 12,000 vectors; its recall at
// the real sizes is TestBitSketchRecall's) is searched through the sketch,
// and VectorSearch still answers as the exact scan does (recall@10 >=
// 0.99, every score the exact cosine), in both vector modes; a filtered
// search takes the int8 scan and matches too.
func TestVectorSearchThroughSketch(t *testing.T) {
	const dims, queries, n = bitsMinDims, 12, 12000
	defer func(m int) { bitsMin = m }(bitsMin)
	bitsMin = 1000
	if !useSketch(n, dims) {
		t.Fatalf("%d vectors of %d dims would not use the sketch", n, dims)
	}
	for _, cfg := range []Config{{Dims: dims, VectorCopyBytes: -1}, {Dims: dims, NoSqliteVec: true}} {
		t.Run(fmt.Sprintf("plain=%v", cfg.NoSqliteVec), func(t *testing.T) {
			ctx := context.Background()
			s := openTestConfig(t, cfg)
			g := newVecGen("text", 5, dims)
			rows := fillVectors(t, s, g, "n", n)
			byID := map[string]*vecRow{}
			for i := range rows {
				byID[rows[i].id] = &rows[i]
			}
			var sum float64
			for range queries {
				q := g.query()
				got, err := s.VectorSearch(ctx, "n", q, Filter{}, 10)
				if err != nil {
					t.Fatal(err)
				}
				want := exactSearch(rows, q, nil, 10)
				sum += recall(got, want)
				for _, c := range got {
					if e := exactSearch([]vecRow{*byID[c.ID]}, q, nil, 1)[0].Score; c.Score != e {
						t.Fatalf("%s scored %v, exact cosine %v", c.ID, c.Score, e)
					}
				}
				f := Filter{SessionKey: "key-3"}
				got, err = s.VectorSearch(ctx, "n", q, f, 10)
				if err != nil {
					t.Fatal(err)
				}
				if r := recall(got, exactSearch(rows, q, func(r *vecRow) bool { return r.sessionKey == "key-3" }, 10)); r < 1 {
					t.Errorf("filtered search: recall %.2f, want 1", r)
				}
			}
			if r := sum / queries; r < 0.99 {
				t.Errorf("recall@10 through the sketch %.4f, want >= 0.99", r)
			} else {
				t.Logf("recall@10 through the sketch over %d vectors: %.4f", n, r)
			}
		})
	}
}

// TestSketchBuiltOnceANamespaceGrows: a space below bitsMin keeps no
// sketch; the add that takes it to bitsMin sketches every vector, later
// adds, replacements and swap-removes keep each position's sketch that of
// its own codes, and a space that shrinks below bitsMin again keeps it.
func TestSketchBuiltOnceANamespaceGrows(t *testing.T) {
	const dims = bitsMinDims
	defer func(m int) { bitsMin = m }(bitsMin)
	bitsMin = 1000
	r := rand.New(rand.NewPCG(13, 14))
	x := newVectorIndex(dims, -1)
	add := func(lo, hi int) {
		var ops []indexOp
		for i := lo; i < hi; i++ {
			ops = append(ops, indexOp{add: true, ns: "ns", rowid: int64(i + 1), entry: vecEntry{id: fmt.Sprint(i), vec: randVec(r, dims)}})
		}
		x.apply(ops)
	}
	remove := func(rowids ...int64) {
		var ops []indexOp
		for _, id := range rowids {
			ops = append(ops, indexOp{ns: "ns", rowid: id})
		}
		x.apply(ops)
	}
	inStep := func(when string) {
		t.Helper()
		sp := x.spaces["ns"]
		if !sp.sketched {
			t.Fatalf("%s: not sketched", when)
		}
		rot := rotationFor(dims)
		if len(sp.bitPopInv) != len(sp.rowids) || len(sp.bitInv) != len(sp.rowids) {
			t.Fatalf("%s: %d pops, %d norms for %d vectors", when, len(sp.bitPopInv), len(sp.bitInv), len(sp.rowids))
		}
		want := &vecSpace{blocks: sp.blocks, rowids: sp.rowids, bits: [][]uint8{}}
		want.buildSketches(dims)
		for i := range sp.rowids {
			if !slices.Equal(sp.sketch(i, rot.words), want.sketch(i, rot.words)) || sp.bitPopInv[i] != want.bitPopInv[i] || sp.bitInv[i] != want.bitInv[i] {
				t.Fatalf("%s: the sketch at position %d is not that of its codes", when, i)
			}
		}
	}
	add(0, 999)
	if sp := x.spaces["ns"]; sp.sketched || len(sp.bits) != 0 || len(sp.bitPopInv) != 0 {
		t.Fatalf("999 vectors: sketched %v with %d blocks, want none", sp.sketched, len(sp.bits))
	}
	add(999, 1000)
	inStep("at bitsMin")
	add(1000, blockVecs+500) // across a block
	add(10, 20)              // replacements
	inStep("after adds and replacements")
	remove(1, 500, int64(blockVecs+500), 7)
	inStep("after swap-removes")
	var all []int64
	for i := 100; i < blockVecs+500; i++ {
		all = append(all, int64(i+1))
	}
	remove(all...)
	if n := len(x.spaces["ns"].rowids); n >= bitsMin {
		t.Fatalf("%d vectors left, want fewer than bitsMin", n)
	}
	inStep("shrunk below bitsMin")
	add(20000, 20010)
	inStep("grown again")
}

// BenchmarkBitCounts is the sketch's first stage a vector at 384 dims: the
// bit counts in use (AVX2 where built and supported) and the generic loop,
// over one block of sketches.
func BenchmarkBitCounts(b *testing.B) {
	const dims = 384
	rot := rotationFor(dims)
	sp, q := sketchedSpace(rand.New(rand.NewPCG(11, 12)), dims, blockVecs)
	out := make([]int32, bitsRun)
	for _, k := range []struct {
		name string
		fn   func(*bitQuery, *vecSpace, int, int, []int32)
	}{{"in-use", bitCounts}, {"generic", bitCountsGeneric}} {
		b.Run(k.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				k.fn(q, sp, (i*bitsRun)%blockVecs, rot.words, out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bitsRun), "ns/vector")
		})
	}
}

// BenchmarkBitsAbove: the scan's pass over one block, counts and screen,
// at a bar that keeps about 1 % of the vectors and a band below it of
// about as many (what bitsCandidates asks at 1M), with the screen in use
// and the scalar one.
func BenchmarkBitsAbove(b *testing.B) {
	const dims = 384
	rot := rotationFor(dims)
	sp, q := sketchedSpace(rand.New(rand.NewPCG(11, 12)), dims, blockVecs)
	est := make([]float32, blockVecs)
	sp.bitsEstimate(q, rot.words, 0, blockVecs, est)
	slices.Sort(est)
	bar, low := est[blockVecs-blockVecs/100], est[blockVecs-blockVecs/50]
	defer func(f func(*bitQuery, []int32, []float32, []float32, float32, []int32) int) { bitsScreen = f }(bitsScreen)
	for _, k := range []struct {
		name string
		fn   func(*bitQuery, []int32, []float32, []float32, float32, []int32) int
	}{{"in-use", bitsScreen}, {"generic", bitsScreenGeneric}} {
		b.Run(k.name, func(b *testing.B) {
			bitsScreen = k.fn
			var out []int32
			var band []bandPos
			for b.Loop() {
				out, band = sp.bitsAbove(q, rot.words, 0, blockVecs, bar, low, out[:0], band[:0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*blockVecs), "ns/vector")
			b.ReportMetric(float64(len(out)+len(band)), "kept")
		})
	}
}

// sketchedSpace returns the sketched space of n random vectors of dims
// dimensions and the bit query of another random vector.
func sketchedSpace(r *rand.Rand, dims, n int) (*vecSpace, *bitQuery) {
	x := newVectorIndex(dims, -1)
	var ops []indexOp
	for i := range n {
		ops = append(ops, indexOp{add: true, ns: "ns", rowid: int64(i + 1), entry: vecEntry{id: fmt.Sprint(i), vec: randVec(r, dims)}})
	}
	x.apply(ops)
	sp := x.spaces["ns"]
	sp.buildSketches(dims)
	unit := make([]float32, dims)
	normalizeInto(unit, randVec(r, dims))
	return sp, newBitQuery(rotationFor(dims), unit)
}

// bitsCandidates keeps every vector whose sketch estimate is among the best
// want, in ascending order and each once: on every generated kind, and on
// a namespace laid out against its sample (the vectors where the sample
// runs lie are near copies of the query, so the first threshold passes
// almost none of the others and it must lower the threshold and pass
// again), and on one smaller than the sample.
func TestBitsCandidatesHoldTheBestEstimates(t *testing.T) {
	const dims = 384
	r := rotationFor(dims)
	check := func(t *testing.T, sp *vecSpace, q []float32, want int) []int32 {
		t.Helper()
		n := len(sp.rowids)
		bq := newBitQuery(r, newQuantQuery(q).unit)
		got := sp.bitsCandidates(bq, r.words, n, want, 2, new(candScratch))
		if len(got) < min(want, n) {
			t.Fatalf("%d candidates of %d vectors, want at least %d", len(got), n, want)
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("candidates not ascending and unique at %d: %d after %d", i, got[i], got[i-1])
			}
		}
		est := make([]float32, n)
		sp.bitsEstimate(bq, r.words, 0, n, est)
		sorted := slices.Clone(est)
		slices.Sort(sorted)
		bar := sorted[n-min(want, n)]
		for p, e := range est {
			if e >= bar {
				if _, ok := slices.BinarySearch(got, int32(p)); !ok {
					t.Fatalf("position %d (estimate %v, the best %d reach %v) is not a candidate", p, e, want, bar)
				}
			}
		}
		return got
	}
	build := func(vecs [][]float32) *vecSpace {
		x := newVectorIndex(dims, -1)
		ops := make([]indexOp, len(vecs))
		for i, v := range vecs {
			ops[i] = indexOp{add: true, ns: "ns", rowid: int64(i + 1), entry: vecEntry{id: fmt.Sprint(i), vec: v}}
		}
		x.apply(ops)
		sp := x.spaces["ns"]
		if !sp.sketched {
			sp.buildSketches(dims)
		}
		return sp
	}
	for _, kind := range vecKinds {
		t.Run(kind, func(t *testing.T) {
			g := newVecGen(kind, 17, dims)
			vecs := make([][]float32, 30000)
			for i := range vecs {
				vecs[i] = g.vector()
			}
			sp := build(vecs)
			for range 4 {
				check(t, sp, g.query(), 1000)
			}
		})
	}
	t.Run("against the sample", func(t *testing.T) {
		const n = 30000
		g := newVecGen("random", 18, dims)
		q := g.query()
		sampled := sampledPositions(n)
		vecs := make([][]float32, n)
		for i := range vecs {
			if sampled[i] {
				vecs[i] = g.near(q, 0.05)
			} else {
				vecs[i] = g.vector()
			}
		}
		check(t, build(vecs), q, 8000)
	})
	// Vectors near the query lie twice as densely where the sample runs
	// lie as elsewhere: the first threshold passes about 700 of the 1,000
	// wanted, and the band below it makes up the rest in the same pass
	// (exactly 1,000: a second pass would keep about 1,400).
	t.Run("the band", func(t *testing.T) {
		const n, want = 30000, 1000
		g := newVecGen("random", 20, dims)
		q := g.query()
		sampled := sampledPositions(n)
		vecs := make([][]float32, n)
		for i := range vecs {
			if (sampled[i] && i%4 == 0) || (!sampled[i] && i%8 == 0) {
				vecs[i] = g.near(q, 1)
			} else {
				vecs[i] = g.vector()
			}
		}
		if got := check(t, build(vecs), q, want); len(got) != want {
			t.Fatalf("%d candidates, want exactly %d from the band", len(got), want)
		}
	})
	t.Run("smaller than the sample", func(t *testing.T) {
		g := newVecGen("text", 19, dims)
		vecs := make([][]float32, 3000)
		for i := range vecs {
			vecs[i] = g.vector()
		}
		sp := build(vecs)
		check(t, sp, g.query(), 500)
		check(t, sp, g.query(), 3000)
	})
}

// sampledPositions is the set of positions whose estimates bitsCandidates
// samples in a namespace of n vectors (n above the sample's size).
func sampledPositions(n int) map[int]bool {
	sampled := map[int]bool{}
	for k := range bitsSampleRuns {
		lo := bitsSampleLo(k, n)
		for p := lo; p < lo+bitsSampleRun; p++ {
			sampled[p] = true
		}
	}
	return sampled
}

// TestForSharesCoversEachIndexOnce: forShares hands out contiguous ranges
// of at least minShare (the last may be shorter) that cover [0, n) once, in
// index order by share, whatever the number of workers, and no more ranges
// than shares.
func TestForSharesCoversEachIndexOnce(t *testing.T) {
	for _, c := range []struct{ n, workers, shares, minShare int }{
		{0, 2, 16, 1}, {1, 2, 16, 1}, {10, 2, 16, 4}, {1000, 2, 16, 1}, {1000, 1, 16, 1},
		{1000, 3, 7, 1}, {1000, 2, 16, 300}, {1 << 20, 2, 16, 16384},
	} {
		var mu sync.Mutex
		seen := make([]int, c.n)
		ranges := map[int][2]int{}
		forShares(c.n, c.workers, c.shares, c.minShare, func(s, lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			ranges[s] = [2]int{lo, hi}
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		count := len(ranges)
		if count > max(c.shares, 1) {
			t.Fatalf("%+v: %d ranges for %d shares", c, count, c.shares)
		}
		for i, k := range seen {
			if k != 1 {
				t.Fatalf("%+v: index %d covered %d times", c, i, k)
			}
		}
		for s := range count {
			r := ranges[s]
			if s > 0 && r[0] != ranges[s-1][1] {
				t.Fatalf("%+v: range %d starts at %d, the one before ends at %d", c, s, r[0], ranges[s-1][1])
			}
			if s < count-1 && r[1]-r[0] < c.minShare {
				t.Fatalf("%+v: range %d holds %d, under %d", c, s, r[1]-r[0], c.minShare)
			}
		}
	}
}

// TestLoadedIndexEqualsIndexBuiltInTurn: the index Open loads (codes
// quantized in batches on every core, sketches made at the end) holds, for
// every rowid, what the index built commit by commit holds: the same
// metadata, codes, scale and sketch; a namespace past bitsMin is sketched,
// one below it is not. Both with vec0 and with the plain table.
func TestLoadedIndexEqualsIndexBuiltInTurn(t *testing.T) {
	const dims = bitsMinDims
	defer func(m int) { bitsMin = m }(bitsMin)
	bitsMin = 3000
	for _, cfg := range []Config{{Dims: dims, VectorCopyBytes: -1}, {Dims: dims, NoSqliteVec: true}} {
		t.Run(fmt.Sprintf("plain=%v", cfg.NoSqliteVec), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "shard.db")
			s, err := Open(ctx, path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			g := newVecGen("text", 9, dims)
			fillVectors(t, s, g, "big", vecLoadQuant+700) // more than one batch of the load, two blocks
			fillVectors(t, s, g, "small", 600)
			built := indexByRowid(s.index)
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(ctx, path, cfg); err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx)
			if sp := s.index.spaces["big"]; sp == nil || !sp.sketched {
				t.Fatal("the namespace past bitsMin is not sketched after the load")
			}
			if sp := s.index.spaces["small"]; sp == nil || sp.sketched {
				t.Fatal("the namespace below bitsMin is sketched after the load")
			}
			loaded := indexByRowid(s.index)
			if len(loaded) != len(built) || len(built) != vecLoadQuant+1300 {
				t.Fatalf("loaded %d vectors, built %d", len(loaded), len(built))
			}
			for rowid, want := range built {
				if got := loaded[rowid]; got != want {
					t.Fatalf("rowid %d loaded as\n%.300s\nbuilt as\n%.300s", rowid, got, want)
				}
			}
		})
	}
}

// indexByRowid describes each vector of x by rowid: namespace, metadata,
// codes, scale and, when sketched, its sketch.
func indexByRowid(x *vectorIndex) map[int64]string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := map[int64]string{}
	words := rotationFor(x.dims).words
	for ns, sp := range x.spaces {
		for i, rowid := range sp.rowids {
			d := fmt.Sprintf("%s %s %s %s %s %s %d %d %v %v", ns, sp.ids[i].string(x.syms), x.syms.str(sp.sessionKeys[i]), x.syms.str(sp.sessionIDs[i]),
				x.syms.str(sp.sources[i]), x.syms.str(sp.dirPaths[i]), sp.tsStart[i], sp.tsEnd[i], sp.vec(i, x.dims), sp.scales[i])
			if sp.sketched {
				d += fmt.Sprintf(" %v %v %v", sp.sketch(i, words), sp.bitPopInv[i], sp.bitInv[i])
			}
			out[rowid] = d
		}
	}
	return out
}
