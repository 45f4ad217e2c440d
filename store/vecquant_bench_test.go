package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
)

// vecFixture is a shard of one generated corpus with its unit vectors as
// one flat []float32 (the float32 exact scan the quantized index is
// compared with).
type vecFixture struct {
	s    *Shard
	rows []vecRow
	flat []float32
	gen  *vecGen
}

var vecFixtures = map[string]*vecFixture{}

// benchVecFixture returns the fixture of kind with n chunks of benchDims in
// namespace "bench", building it on first use (not timed). The shard is
// kept in fixtures (under a key no benchShard uses) so TestMain closes it.
func benchVecFixture(b *testing.B, kind string, n int) *vecFixture {
	b.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	name := fmt.Sprintf("%s-%d", kind, n)
	if f := vecFixtures[name]; f != nil {
		return f
	}
	b.StopTimer()
	defer b.StartTimer()
	if fixtureDir == "" {
		d, err := os.MkdirTemp("", "memindex-store-bench-")
		if err != nil {
			b.Fatal(err)
		}
		fixtureDir = d
	}
	s, err := Open(context.Background(), filepath.Join(fixtureDir, "vec-"+name+".db"), Config{Dims: benchDims})
	if err != nil {
		b.Fatal(err)
	}
	fixtures[-1_000_000_000-len(vecFixtures)] = s
	g := newVecGen(kind, uint64(n), benchDims)
	f := &vecFixture{s: s, rows: fillVectors(b, s, g, "bench", n), gen: g}
	f.flat = make([]float32, 0, n*benchDims)
	for i := range f.rows {
		f.flat = append(f.flat, make([]float32, benchDims)...)
		normalizeInto(f.flat[i*benchDims:], f.rows[i].vec)
		f.rows[i].vec = nil // the flat copy holds them
	}
	vecFixtures[name] = f
	return f
}

// exactTop is the float32 exact scan of the flat unit vectors, split over
// GOMAXPROCS goroutines from parallelScanMin vectors as the index was
// before quantization: the floor a float32 in-memory index cannot beat.
func (f *vecFixture) exactTop(q []float32, limit int) []int32 {
	unit := make([]float32, benchDims)
	normalizeInto(unit, q)
	n := len(f.rows)
	parts := runtime.GOMAXPROCS(0)
	if n < parallelScanMin {
		parts = 1
	}
	heaps := make([]topK, parts)
	step := (n + parts - 1) / parts
	scan := func(p int) {
		h := topK{limit: limit}
		for i := p * step; i < min((p+1)*step, n); i++ {
			score := dot(unit, f.flat[i*benchDims:(i+1)*benchDims])
			if len(h.items) == limit && score < h.items[0].score {
				continue
			}
			h.push(scored{score: score, pos: int32(i), rowid: f.rows[i].rowid})
		}
		heaps[p] = h
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
	all := heaps[0].items
	for _, h := range heaps[1:] {
		all = append(all, h.items...)
	}
	sort.Slice(all, func(i, j int) bool { return better(all[i], all[j]) })
	out := make([]int32, 0, limit)
	for _, it := range all[:min(limit, len(all))] {
		out = append(out, it.pos)
	}
	return out
}

// vecBenchSizes are the corpus sizes of BenchmarkQuantizedVectorSearch:
// 10,000 and 100,000, and 1,000,000 with MEMINDEX_BENCH_1M=1 (a fixture
// of about 3 GB of memory and 2 GB of disk, a few minutes to build).
func vecBenchSizes() []int {
	if os.Getenv("MEMINDEX_BENCH_1M") != "" {
		return []int{10000, 100000, 1000000}
	}
	return []int{10000, 100000}
}

// BenchmarkQuantizedVectorSearch compares, on the same shard and queries,
// the float32 exact in-memory scan (float32-exact) with VectorSearch (the
// int8 scan plus exact rescoring from vec0: int8-rescore), for top 10 and
// top 40 (the query engine's depth for k = 10). int8-rescore reports its
// recall@k against the exact scan and how many float32 vectors it read.
func BenchmarkQuantizedVectorSearch(b *testing.B) {
	for _, kind := range []string{"random", "text"} {
		for _, n := range vecBenchSizes() {
			for _, k := range []int{10, 40} {
				b.Run(fmt.Sprintf("kind=%s/chunks=%d/k=%d/float32-exact", kind, n, k), func(b *testing.B) {
					f := benchVecFixture(b, kind, n)
					qs := benchQueries(f, 64)
					timed(b, func(i int) { f.exactTop(qs[i%len(qs)], k) })
				})
				b.Run(fmt.Sprintf("kind=%s/chunks=%d/k=%d/int8-rescore", kind, n, k), func(b *testing.B) {
					f := benchVecFixture(b, kind, n)
					qs := benchQueries(f, 64)
					ctx := context.Background()
					// Recall and vectors read, over every query once, untimed.
					var hits, want, read int
					for _, q := range qs {
						got, r, err := f.s.vectorSearch(ctx, "bench", newQuantQuery(q), compileFilter(Filter{}), k, k)
						if err != nil {
							b.Fatal(err)
						}
						read += r
						for _, pos := range f.exactTop(q, k) {
							want++
							if slices.ContainsFunc(got, func(c Candidate) bool { return c.ID == f.rows[pos].id }) {
								hits++
							}
						}
					}
					timed(b, func(i int) {
						if _, err := f.s.VectorSearch(ctx, "bench", qs[i%len(qs)], Filter{}, k); err != nil {
							b.Fatal(err)
						}
					})
					b.ReportMetric(float64(read)/float64(len(qs)), "read/op")
					b.ReportMetric(float64(hits)/float64(want), "recall")
				})
			}
		}
	}
}

// benchQueries returns n queries of the fixture's kind (the same for
// every benchmark of a fixture).
func benchQueries(f *vecFixture, n int) [][]float32 {
	g := newVecGen(f.gen.kind, 12345, benchDims)
	if f.gen.kind == "clustered" {
		g.centroids = f.gen.centroids
	}
	qs := make([][]float32, n)
	for i := range qs {
		qs[i] = g.query()
	}
	return qs
}

// BenchmarkIndexHeap reports the Go heap the vector index of a shard of
// random vectors takes once loaded by Open (index-MiB, after a GC), beside
// what the float32 vectors alone would take (float32-MiB).
func BenchmarkIndexHeap(b *testing.B) {
	for _, n := range vecBenchSizes() {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			f := benchVecFixture(b, "random", n)
			path := f.s.path
			ctx := context.Background()
			var ms runtime.MemStats
			for b.Loop() {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				before := ms.HeapAlloc
				s, err := Open(ctx, path, Config{Dims: benchDims, ReadOnly: true})
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapAlloc-before)/(1<<20), "index-MiB")
				runtime.KeepAlive(s)
				s.Close(ctx)
			}
			b.ReportMetric(float64(n*benchDims*4)/(1<<20), "float32-MiB")
		})
	}
}

// BenchmarkQuantizeInto is the quantization of a 384-dim vector (each
// vector Apply or Open adds), against the three-pass version it replaced
// and against itself with the scalar loops where the SIMD ones are in use
// (generic), over 4,096 random vectors in turn (one vector over and over
// would let the branch predictor learn its signs).
func BenchmarkQuantizeInto(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	vs := make([][]float32, 4096)
	for i := range vs {
		vs[i] = randVec(r, 384)
	}
	dst := make([]int8, 384)
	for _, c := range []struct {
		name    string
		fn      func([]int8, []float32) float32
		generic bool // the scalar loops in place of the SIMD ones
	}{{"quantizeInto", quantizeInto, false}, {"threePasses", quantizeThreePasses, false}, {"generic", quantizeInto, true}} {
		b.Run(c.name, func(b *testing.B) {
			if c.generic {
				ss, ma, qc := sumSquares, maxAbs, quantCodes
				sumSquares, maxAbs, quantCodes = sumSquaresGeneric, maxAbsGeneric, quantCodesGeneric
				defer func() { sumSquares, maxAbs, quantCodes = ss, ma, qc }()
			}
			i := 0
			for b.Loop() {
				c.fn(dst, vs[i%len(vs)])
				i++
			}
		})
	}
}

// BenchmarkIndexGC reports what a loaded shard's in-memory indexes (vector
// and keyword) add to a full garbage collection: the collector's CPU time
// (runtime/metrics' /cpu/classes/gc/total) for one runtime.GC() with the
// shard open (gc-cpu-ms), beside the same with it closed (base-cpu-ms), on
// a shard of random vectors opened afresh by Open; medians.
func BenchmarkIndexGC(b *testing.B) {
	for _, n := range vecBenchSizes() {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			f := benchVecFixture(b, "random", n)
			ctx := context.Background()
			sample := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
			gcMs := func() float64 {
				runtime.GC()
				metrics.Read(sample)
				before := sample[0].Value.Float64()
				runtime.GC()
				metrics.Read(sample)
				return (sample[0].Value.Float64() - before) * 1000
			}
			s, err := Open(ctx, f.s.path, Config{Dims: benchDims, ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			for s.kw.Load() == nil { // the keyword index loads in the background
				time.Sleep(10 * time.Millisecond) // polling interval
			}
			var with, base []float64
			for b.Loop() {
				with = append(with, gcMs())
			}
			if err := s.Close(ctx); err != nil {
				b.Fatal(err)
			}
			s = nil // the indexes go with the shard
			for range len(with) {
				base = append(base, gcMs())
			}
			slices.Sort(with)
			slices.Sort(base)
			b.ReportMetric(with[len(with)/2], "gc-cpu-ms")
			b.ReportMetric(base[len(base)/2], "base-cpu-ms")
		})
	}
}
