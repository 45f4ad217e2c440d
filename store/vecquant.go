package store

import "math"

// The in-memory index keeps each vector as int8 codes with one float32
// scale (a quarter of the bytes of float32), and a search ranks those codes
// first, then rescores the best candidates with their exact float32 vectors
// read from SQLite (vecquant_rescore.go).
//
// Quantization is symmetric, one scale per vector: the unit vector n is
// stored as codes c = round(n / s) with s = max|n_i| / 127, so every code is
// in [-127, 127] and n_i = s*c_i + e_i with |e_i| <= s/2. The query is
// quantized the same way, so an approximate score is an integer dot product
// times the two scales. A per-dimension scale would fold into the query for
// free, but needs the spread of every dimension up front and a rewrite of
// all codes when it changes, and measured a larger error on every corpus
// kind (TestPerVectorScaleBeatsPerDimension); one bit a dimension would need
// a far deeper rescoring pool (TestInt8PoolBeatsBinary). BENCHMARKS.md,
// "Quantized vectors", has the figures.

// quantMax is the largest code: -128 is never used, so the SIMD dot product
// may move a code's sign onto the query (VPSIGNB) without overflow.
const quantMax = 127

// quantizeInto writes v, scaled to unit length, into dst as int8 codes and
// returns their scale: the unit vector is about scale*dst. A zero vector
// gives zero codes and scale 0, and so does one with a NaN or infinite
// component (the embedders' vectors are checked for them). The unit vector
// is computed exactly as normalizeInto does, so a rescored score is the one
// an index of float32 vectors would give.
//
// It reads v three times: its sum of squares (sumSquares, the order
// normalizeInto adds them in), its largest |v[i]| (the largest unit
// component is its unit: scaling by a positive number and rounding to
// float32 keep the order), and the codes, each rounded half away from zero
// as math.Round does, by adding a half of its sign in float64 (exact for
// the float32 products, below 2^8) and truncating
// (TestQuantizeMatchesThreePasses). With GOEXPERIMENT=simd and AVX2 the
// three are SIMD loops (dot_simd.go) that give the same bits
// (TestSIMDQuantizeMatchesGeneric).
func quantizeInto(dst []int8, v []float32) float32 {
	dst = dst[:len(v)]
	ss := sumSquares(v)
	if ss == 0 || math.IsInf(ss, 0) || math.IsNaN(ss) {
		clear(dst)
		return 0
	}
	inv := 1 / math.Sqrt(ss)
	m := float32(float64(maxAbs(v)) * inv)
	if m == 0 {
		clear(dst)
		return 0
	}
	scale := m / quantMax
	quantCodes(dst, v, inv, quantMax/m)
	return scale
}

// maxAbs is the largest |v[i]| (NaNs aside: a vector with one has a NaN
// sum of squares, and quantizeInto stops there).
var maxAbs = maxAbsGeneric

func maxAbsGeneric(v []float32) float32 {
	var big float32
	for _, f := range v {
		if a := abs32(f); a > big {
			big = a
		}
	}
	return big
}

// quantCodes writes the codes of v for quantizeInto: each v[i] scaled by
// inv in float64, rounded to float32, times k in float32, rounded half
// away from zero and clamped to ±quantMax.
var quantCodes = quantCodesGeneric

func quantCodesGeneric(dst []int8, v []float32, inv float64, k float32) {
	dst = dst[:len(v)]
	for i, f := range v {
		x := float64(float32(float64(f)*inv) * k)
		c := int(x + math.Copysign(0.5, x)) // no branch on the sign: random signs mispredict
		dst[i] = int8(min(max(c, -quantMax), quantMax))
	}
}

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }

// quantQuery is a query prepared for the scan: its unit vector (for the
// exact rescoring), its codes and scale, and the codes' absolute values
// (the unsigned operand of the SIMD dot product).
type quantQuery struct {
	unit  []float32
	codes []int8
	abs   []uint8
	scale float32
}

func newQuantQuery(vec []float32) *quantQuery {
	dims := len(vec)
	q := &quantQuery{unit: make([]float32, dims), codes: make([]int8, dims), abs: make([]uint8, dims)}
	normalizeInto(q.unit, vec)
	q.scale = quantizeInto(q.codes, vec)
	for i, c := range q.codes {
		q.abs[i] = uint8(max(c, -c))
	}
	return q
}

// approx returns the approximate cosine of the query and the vector with
// codes c and scale s.
func (q *quantQuery) approx(c []int8, s float32) float32 {
	return float32(dotI8(q.abs, q.codes, c)) * s * q.scale
}

// quantSigmas is how many standard deviations of its quantization error a
// candidate's approximate score is allowed to be off by (see errMargin).
const quantSigmas = 6

// errMargin bounds, with quantSigmas standard deviations, how far the
// approximate score of a vector with scale s may be from its exact cosine
// with a query of scale qs. Rounding a unit vector to a grid of step s
// leaves an error e with |e_i| <= s/2, spread about uniformly, so <q, e>
// has a standard deviation of about s/sqrt(12) for a unit q; the query's
// own rounding adds qs/sqrt(12) independently. Six of those put the chance
// of a wrong cut far below one in a million candidates, and the margin is
// a few thousandths of a cosine for 384 dims.
func errMargin(s, qs float32) float32 {
	return quantSigmas * float32(math.Sqrt(float64(s*s+qs*qs)/12))
}

// dotI8 is the integer inner product of the query codes (given as absolute
// values abs and signed codes sq) with the codes c (len(c) >= len(abs)):
// dotI8Generic, or a SIMD version where the build and the CPU have one
// (dot_simd.go).
var dotI8 = dotI8Generic

// dotI8Many sets out[j] to dotI8(abs, sq, codes[j*dims:]) for every j:
// the scan scores a run of vectors in one call (dotI8ManyGeneric, or the
// SIMD version of dot_simd.go).
var dotI8Many = dotI8ManyGeneric

func dotI8ManyGeneric(abs []uint8, sq, codes []int8, dims int, out []int32) {
	codes = codes[:len(out)*dims]
	for j := range out {
		out[j] = dotI8(abs, sq, codes[j*dims:])
	}
}

// dotI8Pos sets out[j] to the dotI8 of the query with the codes of the
// vector at position pos[j] of sp (dotI8PosGeneric, or the SIMD version).
var dotI8Pos = dotI8PosGeneric

func dotI8PosGeneric(abs []uint8, sq []int8, sp *vecSpace, pos []int32, dims int, out []int32) {
	out = out[:len(pos)]
	for j, p := range pos {
		out[j] = dotI8(abs, sq, sp.vec(int(p), dims))
	}
}

// dotI8Generic is dotI8 in plain Go, four accumulators.
func dotI8Generic(abs []uint8, sq, c []int8) int32 {
	sq, c = sq[:len(abs)], c[:len(abs)]
	var s0, s1, s2, s3 int32
	for len(sq) >= 4 {
		a, b := sq[:4:4], c[:4:4]
		s0 += int32(a[0]) * int32(b[0])
		s1 += int32(a[1]) * int32(b[1])
		s2 += int32(a[2]) * int32(b[2])
		s3 += int32(a[3]) * int32(b[3])
		sq, c = sq[4:], c[4:]
	}
	for i := range sq {
		s0 += int32(sq[i]) * int32(c[i])
	}
	return (s0 + s1) + (s2 + s3)
}
