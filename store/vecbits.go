package store

import (
	"cmp"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// The 1-bit sketch: a first stage in front of the int8 scan for large
// namespaces. The int8 codes of a million 384-dimension vectors are 384 MB,
// and a scan of them is bound by memory bandwidth (about 20 ms a question
// on two cores); one bit a dimension is a sixth of that, and ranks well
// enough to choose the few thousand vectors the int8 codes then rank.
//
// Each unit vector v is first rotated, R·v with R a fixed random ±1
// diagonal followed by a normalised Walsh–Hadamard transform of the next
// power of two of dims (zero padded), which spreads every direction over
// all coordinates so that no one coordinate's sign matters more than
// another's. The sketch keeps the signs s of R·v (a bit a coordinate), how
// many are set, and 1/Σ|(R·v)_j|. The estimate of the cosine with a
// rotated unit query r is <r, s>/Σ|(R·v)_j| (the RaBitQ estimator:
// <r, s/√D> / <R·v, s/√D>), and <r, s> is computed with popcounts against
// r quantized to 4 bits a coordinate (bit-planes).
//
// The sketch is made from the int8 codes (sketchAt), for a whole namespace
// once it reaches bitsMin vectors (buildSketches) and at every add after.
//
// The sketch only chooses candidates: the int8 scores of the chosen ones
// rank them as the plain int8 scan would, and the best of those are
// rescored with their float32 vectors (vecquant_rescore.go). A vector the
// sketch misses is lost to the search, so the pool is wide (bitsPool), and
// TestBitSketchRecall measures recall@10 against the exact scan on every
// generated corpus kind.

// bitsMin is the namespace size from which a search without a filter uses
// the sketch. Below it the int8 scan of the whole namespace costs about
// what the sketch and the scattered int8 reads of its pool do. It was
// 150,000 from the first in-process figures (100,000 random 384-dim
// vectors took 2.2–3.0 ms through the sketch against 2.0–2.9 ms for the
// int8 scan), set a day before the sketch's bit counts got their AVX2
// path; on 2026-12-07 the bench's vector suite gave at 50,000
// vectors p50 / p99 1.88 / 2.61 ms through the sketch against 1.99 / 3.20
// for the int8 scan (recall@10 1.000 both), at 100,000 2.42 / 3.47 against
// 3.63 / 4.90 (recall@10 0.999 against 1.000); hybrid search over NATS at
// 100,000 chunks p99 5.8–7.3 against 9.4–10.7 ms (BENCHMARKS.md,
// twenty-second session). (A variable so that a test can lower it.)
var bitsMin = 50000

// bitsMinDims is the fewest dimensions a sketch is used at: fewer bits
// rank too coarsely (a 64-bit sketch of 32 dimensions held recall@10 at
// 0.99 only just), and codes that short make the int8 scan cheap anyway.
const bitsMinDims = 128

// useSketch reports whether a search of n vectors of dims dimensions
// without a filter goes through the sketch.
func useSketch(n, dims int) bool { return n >= bitsMin && dims >= bitsMinDims }

// bitsPool is how many vectors the sketch passes to the int8 stage for a
// search whose int8 stage keeps pool: a fiftieth of the namespace, and at
// least 4,096 and 64 times pool.
func bitsPool(n, pool int) int { return max(n/50, 4096, 64*pool) }

// bitRotation is the fixed random rotation of the sketch for one dims.
type bitRotation struct {
	dims  int
	d     int // next power of two of dims
	words int // d/64, at least 1
	signs []float32
}

var rotations sync.Map // dims → *bitRotation

func rotationFor(dims int) *bitRotation {
	if r, ok := rotations.Load(dims); ok {
		return r.(*bitRotation)
	}
	d := 64 // at least a word of bits (and the 8 rotate unrolls)
	for d < dims {
		d *= 2
	}
	r := &bitRotation{dims: dims, d: d, words: d / 64, signs: make([]float32, d)}
	g := rand.New(rand.NewPCG(0x6d656d69, uint64(dims))) // fixed: the sketch is never stored
	for i := range r.signs {
		r.signs[i] = float32(1 - 2*g.IntN(2))
	}
	got, _ := rotations.LoadOrStore(dims, r)
	return got.(*bitRotation)
}

// rotate writes R·unit into dst (len d): the signs, then the butterflies
// of the Walsh–Hadamard transform (the first three levels eight elements
// at a time, unrolled), then 1/√d.
func (r *bitRotation) rotate(dst, unit []float32) {
	dst = dst[:r.d]
	signs := r.signs[:r.dims]
	for i, f := range unit[:r.dims] {
		dst[i] = f * signs[i]
	}
	clear(dst[r.dims:])
	for i := 0; i+8 <= len(dst); i += 8 {
		q := dst[i : i+8 : i+8]
		a0, a1, a2, a3 := q[0]+q[1], q[0]-q[1], q[2]+q[3], q[2]-q[3]
		a4, a5, a6, a7 := q[4]+q[5], q[4]-q[5], q[6]+q[7], q[6]-q[7]
		b0, b1, b2, b3 := a0+a2, a1+a3, a0-a2, a1-a3
		b4, b5, b6, b7 := a4+a6, a5+a7, a4-a6, a5-a7
		q[0], q[1], q[2], q[3] = b0+b4, b1+b5, b2+b6, b3+b7
		q[4], q[5], q[6], q[7] = b0-b4, b1-b5, b2-b6, b3-b7
	}
	whtFrom8(dst, float32(1/math.Sqrt(float64(r.d))))
}

// whtFrom8 runs the butterflies of the Walsh–Hadamard transform of dst
// (len a power of two, at least 8) from half-width 8 up, then scales by
// inv: whtFrom8Generic, or the AVX2 version of dot_simd.go.
var whtFrom8 = whtFrom8Generic

func whtFrom8Generic(dst []float32, inv float32) {
	for h := 8; h < len(dst); h *= 2 {
		for i := 0; i < len(dst); i += 2 * h {
			a, b := dst[i:i+h:i+h], dst[i+h:i+2*h:i+2*h]
			for j := range a {
				x, y := a[j], b[j]
				a[j], b[j] = x+y, x-y
			}
		}
	}
	for i := range dst {
		dst[i] *= inv
	}
}

// sketchInto writes the sign bits of the rotated unit vector of v into dst
// (words uint64) and returns how many are set and 1/Σ|(R·v)_j| (0 for a
// zero vector). scratch holds 2·d float32; v may be scratch[:dims] (it is
// normalised in place there).
func (r *bitRotation) sketchInto(dst []uint64, v, scratch []float32) (pop uint16, inv float32) {
	unit, rot := scratch[:r.dims], scratch[r.d:2*r.d]
	normalizeInto(unit, v)
	r.rotate(rot, unit)
	dst = dst[:r.words]
	var l1 float32
	n := 0
	for w := range dst {
		var word uint64
		for j, f := range rot[w*64 : w*64+64] {
			l1 += abs32(f)
			// The sign bit, inverted: 1 for a positive coordinate (and
			// for +0, which adds nothing to either side); no branch.
			word |= uint64(^math.Float32bits(f)>>31) << j
		}
		dst[w] = word
		n += bits.OnesCount64(word)
	}
	if l1 == 0 {
		return uint16(n), 0
	}
	return uint16(n), 1 / l1
}

// bitQuery is a query prepared for the sketch: its rotated unit vector as
// four bit-planes of 4-bit codes u (r_j ≈ lo + step·u_j), and Σ r_j.
type bitQuery struct {
	planes   [4][]uint64
	lo, step float32
	sum      float32
	// tabs holds, for each byte of a sketch, what its low nibble adds to
	// the count for each of its 16 values, then what its high nibble adds
	// (Σ u_j over the nibble's set bits, at most 60), each table twice (one
	// for each 128-bit half of a VPSHUFB): 64 bytes a sketch byte. The
	// AVX2 bitCounts looks the interleaved sketches up in them.
	tabs []uint8
}

func newBitQuery(r *bitRotation, unit []float32) *bitQuery {
	rot := make([]float32, r.d)
	r.rotate(rot, unit)
	q := &bitQuery{}
	for k := range q.planes {
		q.planes[k] = make([]uint64, r.words)
	}
	lo, hi := slices.Min(rot), slices.Max(rot)
	q.lo = lo
	if hi > lo {
		q.step = (hi - lo) / 15
	}
	us := make([]uint8, 64*r.words)
	for j, f := range rot {
		q.sum += f
		if q.step == 0 {
			continue
		}
		u := uint64(min(max(math.Round(float64((f-lo)/q.step)), 0), 15))
		us[j] = uint8(u)
		for k := range q.planes {
			q.planes[k][j/64] |= (u >> k & 1) << (j % 64)
		}
	}
	// Bit j of a sketch is bit j%8 of its byte j/8 (the words are
	// little-endian).
	q.tabs = make([]uint8, 64*8*r.words)
	for b := range 8 * r.words {
		t := q.tabs[64*b : 64*(b+1)]
		for nib := range 16 {
			var l, h uint8
			for k := range 4 {
				if nib>>k&1 != 0 {
					l += us[8*b+k]
					h += us[8*b+4+k]
				}
			}
			t[nib], t[16+nib], t[32+nib], t[48+nib] = l, l, h, h
		}
	}
	return q
}

// estimate is the sketch's estimate of the cosine of the query with the
// vector of sign bits b, pop bits set and inverse L1 norm inv:
// <r, s> = 2·Σ_{j: b_j} r_j − Σ r_j, with Σ_{j: b_j} r_j ≈ lo·pop +
// step·Σ_k 2^k·popcount(b & plane_k).
func (q *bitQuery) estimate(b []uint64, pop uint16, inv float32) float32 {
	return q.fromCount(q.count(b), float32(pop)*inv, inv)
}

// count is Σ_k 2^k·popcount(b & plane_k).
func (q *bitQuery) count(b []uint64) int32 {
	p0, p1, p2, p3 := q.planes[0][:len(b)], q.planes[1][:len(b)], q.planes[2][:len(b)], q.planes[3][:len(b)]
	var c0, c1, c2, c3 int
	for w, x := range b {
		c0 += bits.OnesCount64(x & p0[w])
		c1 += bits.OnesCount64(x & p1[w])
		c2 += bits.OnesCount64(x & p2[w])
		c3 += bits.OnesCount64(x & p3[w])
	}
	return int32(c0 + 2*c1 + 4*c2 + 8*c3)
}

// fromCount is the estimate of a vector whose count is c, whose inverse
// L1 norm is inv and pop·inv is popInv: 2·lo·popInv + (2·step·c − sum)·inv,
// the form the vector screen computes eight lanes at a time (bitsScreen).
func (q *bitQuery) fromCount(c int32, popInv, inv float32) float32 {
	return 2*q.lo*popInv + (2*q.step*float32(c)-q.sum)*inv
}

// bitsScreen writes into hits the indexes j of counts whose estimate
// (fromCount of counts[j], popInv[j], inv[j]) is at least low, in
// ascending order, and returns how many (bitsScreenGeneric, or the AVX2
// version of dot_simd.go, which computes eight estimates at a time and
// skips eight below low with one test). hits holds len(counts).
var bitsScreen = bitsScreenGeneric

func bitsScreenGeneric(q *bitQuery, counts []int32, popInv, inv []float32, low float32, hits []int32) int {
	n := 0
	for j, c := range counts {
		if q.fromCount(c, popInv[j], inv[j]) >= low {
			hits[n] = int32(j)
			n++
		}
	}
	return n
}

// bitsRun is how many vectors bitRuns counts in one bitCounts call.
const bitsRun = 256

// bitCounts sets out[j] to Σ_k 2^k·popcount(b & plane_k) for the sketch b
// of the vector at position lo+j (bitCountsGeneric, or the AVX2 version
// of dot_simd.go).
var bitCounts = bitCountsGeneric

func bitCountsGeneric(q *bitQuery, sp *vecSpace, lo, words int, out []int32) {
	var buf [16]uint64
	b := buf[:0]
	if words > len(buf) {
		b = make([]uint64, words)
	}
	b = b[:words]
	for j := range out {
		sp.sketchTo(lo+j, words, b)
		out[j] = q.count(b)
	}
}

// bitsEstimate writes the estimates of positions [lo,hi) into est[:hi-lo].
func (sp *vecSpace) bitsEstimate(q *bitQuery, words, lo, hi int, est []float32) {
	sp.bitRuns(q, words, lo, hi, func(i int, run, _ []int32) {
		for j, c := range run {
			est[i-lo+j] = q.fromCount(c, sp.bitPopInv[i+j], sp.bitInv[i+j])
		}
	})
}

// bitsAbove appends to out, in ascending order, the positions in [lo,hi)
// whose estimate is at least bar, and to band those whose estimate is at
// least low but below bar, with their estimates.
func (sp *vecSpace) bitsAbove(q *bitQuery, words, lo, hi int, bar, low float32, out []int32, band []bandPos) ([]int32, []bandPos) {
	sp.bitRuns(q, words, lo, hi, func(i int, run, hits []int32) {
		popInv, inv := sp.bitPopInv[i:i+len(run)], sp.bitInv[i:i+len(run)]
		for _, j := range hits[:bitsScreen(q, run, popInv, inv, low, hits)] {
			// The screen's lanes may round differently (fused
			// multiply-adds): this estimate is the one that counts.
			p := i + int(j)
			if e := q.fromCount(run[j], popInv[j], inv[j]); e >= bar {
				out = append(out, int32(p))
			} else if e >= low {
				band = append(band, bandPos{pos: int32(p), est: e})
			}
		}
	})
	return out, band
}

// bitRuns counts positions [lo,hi) in runs of at most bitsRun within a
// block and calls fn with each run's first position, its counts and room
// for as many hits (bitsScreen).
func (sp *vecSpace) bitRuns(q *bitQuery, words, lo, hi int, fn func(i int, run, hits []int32)) {
	scr := bitsScratchPool.Get().(*bitsScratch)
	defer bitsScratchPool.Put(scr)
	for i := lo; i < hi; {
		end := min(hi, i+bitsRun, (i/blockVecs+1)*blockVecs)
		run := scr.counts[:end-i]
		bitCounts(q, sp, i, words, run)
		fn(i, run, scr.hits[:len(run)])
		i = end
	}
}

// bitsScratch holds a run's counts and the screen's hits in it (on the
// heap either way: bitCounts and bitsScreen are called through variables,
// so arrays on the stack would escape at every call).
type bitsScratch struct{ counts, hits [bitsRun]int32 }

var bitsScratchPool = sync.Pool{New: func() any { return new(bitsScratch) }}

// bandPos is a position whose estimate fell just below the threshold.
type bandPos struct {
	pos int32
	est float32
}

// bitsGroup is how many vectors' sketches are stored interleaved: byte b
// of the sketch of the vector in lane l of a group is byte b·bitsGroup+l
// of the group's bytes, so that one 32-byte load holds the same byte of
// 32 sketches and one table lookup a nibble counts it for all of them
// (the "fast scan" layout; bitCounts). A multiple of it divides
// blockVecs.
const bitsGroup = 32

// growSketch adds the slot of one more vector to the sketch arrays (a
// group's bytes come with its first vector).
func (sp *vecSpace) growSketch(dims int) {
	i, nb := len(sp.bitPopInv), 8*rotationFor(dims).words
	if i%bitsGroup == 0 {
		if i%blockVecs == 0 { // the first block grows, later ones start full size
			c := bitsGroup * nb
			if i > 0 {
				c = blockVecs * nb
			}
			sp.bits = append(sp.bits, make([]uint8, 0, c))
		}
		b := &sp.bits[len(sp.bits)-1]
		*b = append(*b, make([]uint8, bitsGroup*nb)...)
	}
	sp.bitPopInv = append(sp.bitPopInv, 0)
	sp.bitInv = append(sp.bitInv, 0)
}

// shrinkSketch drops the group of the slot just removed (bitPopInv's length)
// once that slot was its first, and the last block once it is empty (the
// first is kept). A vector added later into a slot of a group still held
// writes every byte of its lane.
func (sp *vecSpace) shrinkSketch(dims int) {
	n := len(sp.bitPopInv)
	if n%bitsGroup != 0 {
		return
	}
	lb := len(sp.bits) - 1
	b := &sp.bits[lb]
	*b = (*b)[:len(*b)-bitsGroup*8*rotationFor(dims).words]
	if len(*b) == 0 && lb > 0 {
		*b = nil
		sp.bits = sp.bits[:lb]
	}
}

// group returns the bytes of the group holding the sketch of the vector at
// position i (nb bytes a sketch) and its lane there.
func (sp *vecSpace) group(i, nb int) ([]uint8, int) {
	off := (i % blockVecs) / bitsGroup * bitsGroup * nb
	return sp.bits[i/blockVecs][off : off+bitsGroup*nb], i % bitsGroup
}

// sketchTo writes the words of the sketch of the vector at position i to
// dst (words long).
func (sp *vecSpace) sketchTo(i, words int, dst []uint64) {
	g, l := sp.group(i, 8*words)
	for w := range dst[:words] {
		var x uint64
		for k := range 8 {
			x |= uint64(g[(8*w+k)*bitsGroup+l]) << (8 * k)
		}
		dst[w] = x
	}
}

// setSketch stores src as the sketch of the vector at position i.
func (sp *vecSpace) setSketch(i int, src []uint64) {
	g, l := sp.group(i, 8*len(src))
	for w, x := range src {
		for k := range 8 {
			g[(8*w+k)*bitsGroup+l] = uint8(x >> (8 * k))
		}
	}
}

// copySketch makes the sketch at position dst that at src.
func (sp *vecSpace) copySketch(dst, src, words int) {
	gd, ld := sp.group(dst, 8*words)
	gs, ls := sp.group(src, 8*words)
	for b := range 8 * words {
		gd[b*bitsGroup+ld] = gs[b*bitsGroup+ls]
	}
}

// sketchAt computes the sketch of the vector at position i from its int8
// codes (the unit vector to within half a quantization step a coordinate,
// far below what one bit a coordinate resolves), so a sketch can be made
// at any time from what the index holds. scratch, if not nil, holds 2·d
// float32.
func (sp *vecSpace) sketchAt(i, dims int, scratch []float32) {
	r := rotationFor(dims)
	if scratch == nil {
		p := sketchScratch.Get().(*[]float32)
		defer sketchScratch.Put(p)
		if len(*p) < 2*r.d {
			*p = make([]float32, 2*r.d)
		}
		scratch = *p
	}
	v := scratch[:dims]
	for j, c := range sp.vec(i, dims) {
		v[j] = float32(c)
	}
	var buf [16]uint64
	b := buf[:0]
	if r.words > len(buf) {
		b = make([]uint64, r.words)
	}
	b = b[:r.words]
	pop, inv := r.sketchInto(b, v, scratch)
	sp.bitPopInv[i], sp.bitInv[i] = float32(pop)*inv, inv
	sp.setSketch(i, b)
}

// sketchScratch holds the scratch vectors of sketchAt.
var sketchScratch = sync.Pool{New: func() any { return new([]float32) }}

// buildSketches makes the sketch of every vector of the space and keeps
// it from then on (sketched), split over GOMAXPROCS goroutines: once a
// namespace's life, when it reaches bitsMin vectors (50,000 sketches of
// about 2.7 µs each at 384 dims, spread over the cores), under the index's
// write lock.
func (sp *vecSpace) buildSketches(dims int) {
	n := len(sp.rowids)
	for range n {
		sp.growSketch(dims)
	}
	sp.sketched = true
	// Split by whole groups: no two goroutines write one group's bytes.
	forParts((n+bitsGroup-1)/bitsGroup, runtime.GOMAXPROCS(0), func(_, lo, hi int) {
		scratch := make([]float32, 2*rotationFor(dims).d)
		for i := lo * bitsGroup; i < min(hi*bitsGroup, n); i++ {
			sp.sketchAt(i, dims, scratch)
		}
	})
}

// sketch returns a copy of the bits of the vector at position i.
func (sp *vecSpace) sketch(i, words int) []uint64 {
	b := make([]uint64, words)
	sp.sketchTo(i, words, b)
	return b
}

// bitsSampleRuns and bitsSampleRun shape the sample bitsCandidates takes
// its threshold from: 128 runs of 32 neighbouring vectors spread evenly
// over the namespace, 4,096 estimates from 128 places (a few hundred KB of
// sketches, and as many pages, where 4,096 single vectors would each be a
// page of its own).
const (
	bitsSampleRuns = 128
	bitsSampleRun  = 32
)

// bitsSampleLo is the first position of sample run k of a namespace of n
// vectors (n at least the sample's size).
func bitsSampleLo(k, n int) int { return k * (n - bitsSampleRun) / (bitsSampleRuns - 1) }

// bitsCandidates returns, in ascending order, the positions in [0,n) whose
// sketch estimate is among about the best want (at least want of them
// when n >= want). It takes a threshold from the sorted estimates of a
// sample, aimed a quarter above want, and keeps every position at or above
// it in one pass over the sketches, in ranges parts goroutines take in
// turn (forShares), storing no estimate. The sample's threshold is itself an estimate, and now and then
// too few pass it (4 searches of 400 over 1M generated text vectors): so the
// same pass also keeps the positions between it and a lower threshold,
// aimed at twice as many, with their estimates, and the best of those make
// up the shortfall. Should even they be too few, it passes again with the
// lower threshold (lowering it by a quarter of the sample, before, once
// let a quarter of the namespace through). The positions returned are
// scr's: valid until scr is used again.
func (sp *vecSpace) bitsCandidates(q *bitQuery, words, n, want, parts int, scr *candScratch) []int32 {
	if want >= n {
		out := slices.Grow(scr.pos[:0], n)[:n]
		scr.pos = out
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	sample := make([]float32, 0, bitsSampleRuns*bitsSampleRun)
	if n <= cap(sample) {
		sample = sample[:n]
		sp.bitsEstimate(q, words, 0, n, sample)
	} else {
		var run [bitsSampleRun]float32
		for k := range bitsSampleRuns {
			lo := bitsSampleLo(k, n)
			sp.bitsEstimate(q, words, lo, lo+bitsSampleRun, run[:])
			sample = append(sample, run[:]...)
		}
	}
	slices.Sort(sample)
	// barFor is the sample's threshold for about count positions.
	barFor := func(count int) float32 {
		rank := len(sample) - 1 - count*len(sample)/n
		if rank <= 0 {
			return float32(math.Inf(-1))
		}
		return sample[rank]
	}
	shares := parts * bitsSharesPerCore
	outs, bands := scr.shares(shares)
	for aim := want + want/4; ; aim *= 2 {
		bar, low := barFor(aim), barFor(2*aim)
		if math.IsInf(float64(low), -1) {
			low = bar // no band: the next pass takes every position
		}
		forShares(n, parts, shares, bitsMinShare, func(s, lo, hi int) {
			outs[s], bands[s] = sp.bitsAbove(q, words, lo, hi, bar, low, outs[s][:0], bands[s][:0])
		})
		out := concatInto(scr.pos[:0], outs)
		scr.pos = out
		if len(out) >= want || math.IsInf(float64(bar), -1) {
			return out
		}
		band := concatInto(scr.band[:0], bands)
		scr.band = band
		if need := want - len(out); len(band) >= need {
			slices.SortFunc(band, func(a, b bandPos) int { return cmp.Compare(b.est, a.est) })
			cut := band[need-1].est // ties with the last one needed go in too
			for _, b := range band {
				if b.est < cut {
					break
				}
				out = append(out, b.pos)
			}
			slices.Sort(out)
			scr.pos = out
			return out
		}
	}
}

// candScratch holds what a search through the sketch appends to: each
// share's positions and band (bitsAbove), their concatenations, and the
// pool's int8 dot products. It is kept between searches
// (candScratchPool): grown by append from nothing at every search, these
// cost a 1M search about 2 ms of its 20 ms of CPU in growslice and in
// zeroing fresh memory (a CPU profile of 600 searches of a 1M bench
// shard). At 1M it holds about half a MB.
type candScratch struct {
	outs  [][]int32
	bands [][]bandPos
	pos   []int32
	band  []bandPos
	dots  []int32
}

var candScratchPool = sync.Pool{New: func() any { return new(candScratch) }}

// shares returns n per-share buffers of positions and of bands, each
// empty, keeping the capacity of earlier searches.
func (c *candScratch) shares(n int) ([][]int32, [][]bandPos) {
	for len(c.outs) < n {
		c.outs, c.bands = append(c.outs, nil), append(c.bands, nil)
	}
	for i := range n { // a share forShares does not use stays empty
		c.outs[i], c.bands[i] = c.outs[i][:0], c.bands[i][:0]
	}
	return c.outs[:n], c.bands[:n]
}

// concatInto appends the elements of every part to dst.
func concatInto[T any](dst []T, parts [][]T) []T {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	dst = slices.Grow(dst, n)
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return dst
}

// A search's pass over the sketches and its pool are cut into
// bitsSharesPerCore ranges a core (forShares), of at least bitsMinShare
// sketches: about half a millisecond each at 1M on this project's 2-core
// box.
const (
	bitsSharesPerCore = 8
	bitsMinShare      = 16384
)

// scanSketch is scan for a whole namespace of n vectors through the
// sketch: the int8 scores of the about want best by sketch estimate
// (bitsPool), the best limit of them kept.
func (sp *vecSpace) scanSketch(q *quantQuery, r *bitRotation, n, limit, want, parts, dims int) topK {
	scr := candScratchPool.Get().(*candScratch)
	defer candScratchPool.Put(scr)
	pos := sp.bitsCandidates(newBitQuery(r, q.unit), r.words, n, want, parts, scr)
	scr.dots = slices.Grow(scr.dots[:0], len(pos))[:len(pos)]
	dots := scr.dots
	if len(pos) < 2048 {
		parts = 1
	}
	// The pool's codes are scattered over the namespace: each vector a few
	// cache misses, which the cores wait on side by side.
	forShares(len(pos), parts, parts*bitsSharesPerCore, 1024, func(_, lo, hi int) {
		dotI8Pos(q.abs, q.codes, sp, pos[lo:hi], dims, dots[lo:hi])
	})
	h := topK{limit: limit, items: make([]scored, 0, min(limit, len(pos)))}
	for j, p := range pos {
		score := float32(dots[j]) * sp.scales[p] * q.scale
		if len(h.items) == limit && score < h.items[0].score {
			continue // cannot enter the top limit
		}
		h.push(scored{score: score, pos: p, rowid: sp.rowids[p]})
	}
	return h
}
