//go:build goexperiment.simd && amd64

package store

import (
	"math/bits"
	"simd/archsimd"
)

// With GOEXPERIMENT=simd (set by the Makefile) and a CPU with AVX2 and FMA,
// the exact rescoring uses 256-bit fused multiply-adds (about 3.7 times the
// scalar loop's speed on this project's machines) and the quantized scan
// 256-bit integer multiply-adds of 32 int8 codes at a time (see
// BENCHMARKS.md).
func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		dot = dotAVX2
		dotI8 = dotI8AVX2
		dotI8Many = dotI8ManyAVX2
		dotI8Pos = dotI8PosAVX2
		dotKind = "avx2+fma"
		whtFrom8 = whtFrom8AVX2
		bitCounts = bitCountsAVX2
		bitsScreen = bitsScreenAVX2
		sumSquares = sumSquaresAVX2
		scaleInto = scaleIntoAVX2
		maxAbs = maxAbsAVX2
		quantCodes = quantCodesAVX2
	}

}

// dotAVX2 is the inner product of a and b (len(b) >= len(a)) with four
// 8-lane accumulators.
func dotAVX2(a, b []float32) float32 {
	b = b[:len(a)]
	var acc0, acc1, acc2, acc3 archsimd.Float32x8
	for len(a) >= 32 {
		acc0 = archsimd.LoadFloat32x8Slice(a).MulAdd(archsimd.LoadFloat32x8Slice(b), acc0)
		acc1 = archsimd.LoadFloat32x8Slice(a[8:]).MulAdd(archsimd.LoadFloat32x8Slice(b[8:]), acc1)
		acc2 = archsimd.LoadFloat32x8Slice(a[16:]).MulAdd(archsimd.LoadFloat32x8Slice(b[16:]), acc2)
		acc3 = archsimd.LoadFloat32x8Slice(a[24:]).MulAdd(archsimd.LoadFloat32x8Slice(b[24:]), acc3)
		a, b = a[32:], b[32:]
	}
	for len(a) >= 8 {
		acc0 = archsimd.LoadFloat32x8Slice(a).MulAdd(archsimd.LoadFloat32x8Slice(b), acc0)
		a, b = a[8:], b[8:]
	}
	var lanes [8]float32
	acc0.Add(acc1).Add(acc2.Add(acc3)).Store(&lanes)
	// VZEROUPPER before the scalar sums, which run in SSE registers: SSE
	// while the upper halves are dirty pays a transition penalty (the
	// rescoring's dot measured 176 ns at 384 dims with it, the generic
	// loop 254).
	archsimd.ClearAVXUpperBits()
	s := ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// dotI8AVX2 is dotI8 with AVX2: VPSIGNB moves the sign of each query code
// onto the vector's code, VPMADDUBSW multiplies the query's absolute values
// by those and adds pairs into int16 (at most 2*127*127, no saturation:
// codes are never -128), and VPMADDWD by ones widens the pairs into int32
// accumulators.
func dotI8AVX2(abs []uint8, sq, c []int8) int32 {
	sq, c = sq[:len(abs)], c[:len(abs)]
	ones := archsimd.BroadcastInt16x16(1)
	var acc0, acc1 archsimd.Int32x8
	for len(abs) >= 64 {
		p0 := archsimd.LoadUint8x32Slice(abs).DotProductPairsSaturated(archsimd.LoadInt8x32Slice(c).CopySign(archsimd.LoadInt8x32Slice(sq)))
		p1 := archsimd.LoadUint8x32Slice(abs[32:]).DotProductPairsSaturated(archsimd.LoadInt8x32Slice(c[32:]).CopySign(archsimd.LoadInt8x32Slice(sq[32:])))
		acc0 = acc0.Add(p0.DotProductPairs(ones))
		acc1 = acc1.Add(p1.DotProductPairs(ones))
		abs, sq, c = abs[64:], sq[64:], c[64:]
	}
	for len(abs) >= 32 {
		p0 := archsimd.LoadUint8x32Slice(abs).DotProductPairsSaturated(archsimd.LoadInt8x32Slice(c).CopySign(archsimd.LoadInt8x32Slice(sq)))
		acc0 = acc0.Add(p0.DotProductPairs(ones))
		abs, sq, c = abs[32:], sq[32:], c[32:]
	}
	var lanes [8]int32
	acc0.Add(acc1).Store(&lanes)
	s := ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
	for i := range sq {
		s += int32(sq[i]) * int32(c[i])
	}
	return s
}

// dotI8ManyAVX2 is dotI8Many with dotI8AVX2, then VZEROUPPER: the scan's
// scalar float code after it runs in SSE registers, and SSE instructions
// while the upper halves of the YMM registers are dirty pay a transition
// penalty each (a call of dotI8AVX2 per vector from the scan loop measured
// about twice the time a vector of this loop does).
func dotI8ManyAVX2(abs []uint8, sq, codes []int8, dims int, out []int32) {
	codes = codes[:len(out)*dims]
	for j := range out {
		out[j] = dotI8AVX2(abs, sq, codes[j*dims:])
	}
	archsimd.ClearAVXUpperBits()
}

// dotI8PosAVX2 is dotI8Pos four positions at a time (dotI8x4AVX2), then
// VZEROUPPER (see dotI8ManyAVX2). The positions are scattered (the
// sketch's pool at 1M: 2 % of the namespace), so each vector's first load
// misses the caches; one vector at a time, 94 % of the kernel's samples
// sat on that load.
func dotI8PosAVX2(abs []uint8, sq []int8, sp *vecSpace, pos []int32, dims int, out []int32) {
	out = out[:len(pos)]
	j := 0
	for ; j+4 <= len(pos); j += 4 {
		dotI8x4AVX2(abs, sq, sp.vec(int(pos[j]), dims), sp.vec(int(pos[j+1]), dims),
			sp.vec(int(pos[j+2]), dims), sp.vec(int(pos[j+3]), dims), (*[4]int32)(out[j:j+4]))
	}
	for ; j < len(pos); j++ {
		out[j] = dotI8AVX2(abs, sq, sp.vec(int(pos[j]), dims))
	}
	archsimd.ClearAVXUpperBits()
}

// dotI8x4AVX2 is dotI8AVX2 of four vectors at once: each 32 query codes
// are loaded once for the four, and the four vectors' loads of a step are
// independent, so the CPU has the cache misses of four scattered vectors
// in flight instead of one.
func dotI8x4AVX2(abs []uint8, sq, c0, c1, c2, c3 []int8, out *[4]int32) {
	n := len(abs)
	sq, c0, c1, c2, c3 = sq[:n], c0[:n], c1[:n], c2[:n], c3[:n]
	ones := archsimd.BroadcastInt16x16(1)
	var a0, a1, a2, a3 archsimd.Int32x8
	i := 0
	for ; i+32 <= n; i += 32 {
		a, q := archsimd.LoadUint8x32Slice(abs[i:]), archsimd.LoadInt8x32Slice(sq[i:])
		v0, v1 := archsimd.LoadInt8x32Slice(c0[i:]), archsimd.LoadInt8x32Slice(c1[i:])
		v2, v3 := archsimd.LoadInt8x32Slice(c2[i:]), archsimd.LoadInt8x32Slice(c3[i:])
		a0 = a0.Add(a.DotProductPairsSaturated(v0.CopySign(q)).DotProductPairs(ones))
		a1 = a1.Add(a.DotProductPairsSaturated(v1.CopySign(q)).DotProductPairs(ones))
		a2 = a2.Add(a.DotProductPairsSaturated(v2.CopySign(q)).DotProductPairs(ones))
		a3 = a3.Add(a.DotProductPairsSaturated(v3.CopySign(q)).DotProductPairs(ones))
	}
	var lanes [4][8]int32
	a0.Store(&lanes[0])
	a1.Store(&lanes[1])
	a2.Store(&lanes[2])
	a3.Store(&lanes[3])
	cs := [4][]int8{c0, c1, c2, c3}
	for k := range 4 {
		l := &lanes[k]
		s := ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
		for d := i; d < n; d++ {
			s += int32(sq[d]) * int32(cs[k][d])
		}
		out[k] = s
	}
}

// whtFrom8AVX2 is whtFrom8 eight lanes at a time, then VZEROUPPER.
func whtFrom8AVX2(dst []float32, inv float32) {
	for h := 8; h < len(dst); h *= 2 {
		for i := 0; i < len(dst); i += 2 * h {
			a, b := dst[i:i+h:i+h], dst[i+h:i+2*h:i+2*h]
			for j := 0; j+8 <= len(a); j += 8 {
				x, y := archsimd.LoadFloat32x8Slice(a[j:]), archsimd.LoadFloat32x8Slice(b[j:])
				x.Add(y).StoreSlice(a[j:])
				x.Sub(y).StoreSlice(b[j:])
			}
		}
	}
	s := archsimd.BroadcastFloat32x8(inv)
	for i := 0; i+8 <= len(dst); i += 8 {
		archsimd.LoadFloat32x8Slice(dst[i:]).Mul(s).StoreSlice(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
}

// bitCountsAVX2 is bitCounts with AVX2 over the sketches' groups
// (bitsGroup): one 32-byte load holds one byte of the sketches of a
// group's 32 vectors; its two nibbles are looked up (VPSHUFB) in the
// query's two tables of that byte (bitQuery.tabs), which hold what each
// nibble value adds to the count. Two bytes' sums (at most 240 a lane) go
// into 16-bit counts, the even lanes' and the odd lanes' apart (at most
// 256 pairs of bytes: 4,096 dims); then VZEROUPPER. Four lookups a vector
// at 384 dims, where four bit-planes a vector took sixteen.
func bitCountsAVX2(q *bitQuery, sp *vecSpace, lo, words int, out []int32) {
	nb := 8 * words
	if nb > 512 {
		bitCountsGeneric(q, sp, lo, words, out)
		return
	}
	nib := archsimd.BroadcastUint8x32(0x0f)
	four := archsimd.BroadcastUint32x8(4)
	even := archsimd.BroadcastUint16x16(0x00ff).AsUint8x32()
	odd := archsimd.LoadInt8x32(&oddBytes)
	tabs := q.tabs[:64*nb]
	var zero16 archsimd.Uint16x16
	var counts [bitsGroup]int32
	for i, end := lo, lo+len(out); i < end; {
		g, l := sp.group(i, nb)
		t := tabs
		var accE, accO archsimd.Uint16x16
		for len(g) >= 64 && len(t) >= 128 {
			s := nibbleSum(archsimd.LoadUint8x32Slice(g), t, nib, four).
				Add(nibbleSum(archsimd.LoadUint8x32Slice(g[32:]), t[64:], nib, four))
			accE = accE.Add(s.And(even).AsUint16x16())
			accO = accO.Add(s.PermuteOrZeroGrouped(odd).AsUint16x16())
			g, t = g[64:], t[128:]
		}
		// Back in lane order, in 256-bit operations only (a 128-bit one
		// is encoded as legacy SSE, and its transition with the upper
		// halves dirty costs more than the counting): each 128-bit half
		// interleaves the even and odd lanes' counts (lanes 0-7 and 16-23
		// in l8, 8-15 and 24-31 in h8), then with zeros to 32 bits, then
		// the halves are paired up in order (VPERM2I128).
		l8, h8 := accE.InterleaveLoGrouped(accO), accE.InterleaveHiGrouped(accO)
		a, b := l8.InterleaveLoGrouped(zero16), l8.InterleaveHiGrouped(zero16) // 0-3|16-19, 4-7|20-23
		c, d := h8.InterleaveLoGrouped(zero16), h8.InterleaveHiGrouped(zero16) // 8-11|24-27, 12-15|28-31
		a.Select128FromPair(0, 2, b).AsInt32x8().Store((*[8]int32)(counts[0:8]))
		c.Select128FromPair(0, 2, d).AsInt32x8().Store((*[8]int32)(counts[8:16]))
		a.Select128FromPair(1, 3, b).AsInt32x8().Store((*[8]int32)(counts[16:24]))
		c.Select128FromPair(1, 3, d).AsInt32x8().Store((*[8]int32)(counts[24:32]))
		n := min(bitsGroup-l, end-i)
		for k, c := range counts[l : l+n] { // no call here: a call spills the vectors
			out[i-lo+k] = c
		}
		i += n
	}
	archsimd.ClearAVXUpperBits()
}

// bitsScreenAVX2 is bitsScreen eight lanes at a time: the estimates as
// fromCount computes them but with fused multiply-adds (VFMADD), compared
// with low (VCMPPS) into a mask of eight bits (VMOVMSKPS); eight lanes
// below low, nearly every eight in a scan, cost one test. The lanes past
// the last eight go through the scalar form.
func bitsScreenAVX2(q *bitQuery, counts []int32, popInv, inv []float32, low float32, hits []int32) int {
	popInv, inv = popInv[:len(counts)], inv[:len(counts)]
	a, b := archsimd.BroadcastFloat32x8(2*q.lo), archsimd.BroadcastFloat32x8(2*q.step)
	sum, lo8 := archsimd.BroadcastFloat32x8(-q.sum), archsimd.BroadcastFloat32x8(low)
	n, j := 0, 0
	for ; j+8 <= len(counts); j += 8 {
		c := archsimd.LoadInt32x8Slice(counts[j:]).ConvertToFloat32()
		e := c.MulAdd(b, sum).MulAdd(archsimd.LoadFloat32x8Slice(inv[j:]), archsimd.LoadFloat32x8Slice(popInv[j:]).Mul(a))
		m := e.GreaterEqual(lo8).ToBits()
		for m != 0 { // no call here: a call spills the vectors
			hits[n] = int32(j + bits.TrailingZeros8(m))
			n++
			m &= m - 1
		}
	}
	archsimd.ClearAVXUpperBits()
	for ; j < len(counts); j++ {
		if q.fromCount(counts[j], popInv[j], inv[j]) >= low {
			hits[n] = int32(j)
			n++
		}
	}
	return n
}

// oddBytes moves each odd byte of a 128-bit half down to the even byte
// before it and zeroes the odd ones (VPSHUFB indices; -128 zeroes).
var oddBytes = [32]int8{
	1, -128, 3, -128, 5, -128, 7, -128, 9, -128, 11, -128, 13, -128, 15, -128,
	1, -128, 3, -128, 5, -128, 7, -128, 9, -128, 11, -128, 13, -128, 15, -128,
}

// nibbleSum returns, for each byte of x, t's low table at its low nibble
// plus t's high table at its high nibble (bitQuery.tabs); nib is 0x0f in
// every byte, four 4 in every 32-bit lane. The high nibbles are shifted
// down by a shift of each lane by a vector of counts (VPSRLVD): the shift
// by a scalar count came with a legacy-SSE MOVQ of the count in the loop,
// whose transition cost three quarters of the time.
func nibbleSum(x archsimd.Uint8x32, t []uint8, nib archsimd.Uint8x32, four archsimd.Uint32x8) archsimd.Uint8x32 {
	lo := x.And(nib)
	hi := x.AsUint32x8().ShiftRight(four).AsUint8x32().And(nib)
	t = t[:64]
	return archsimd.LoadUint8x32Slice(t).PermuteOrZeroGrouped(lo.AsInt8x32()).
		Add(archsimd.LoadUint8x32Slice(t[32:]).PermuteOrZeroGrouped(hi.AsInt8x32()))
}

// sumSquaresAVX2 is sumSquaresGeneric four float64 lanes at a time: acc0
// holds running sums 0-3, acc1 sums 4-7, and their lane sums are the
// generic version's pairs.
func sumSquaresAVX2(v []float32) float64 {
	var acc0, acc1 archsimd.Float64x4
	i := 0
	for ; i+8 <= len(v); i += 8 {
		x0 := archsimd.LoadFloat32x4Slice(v[i:]).ConvertToFloat64()
		x1 := archsimd.LoadFloat32x4Slice(v[i+4:]).ConvertToFloat64()
		acc0 = acc0.Add(x0.Mul(x0))
		acc1 = acc1.Add(x1.Mul(x1))
	}
	var t [4]float64
	acc0.Add(acc1).StoreSlice(t[:])
	archsimd.ClearAVXUpperBits()
	return addSquares((t[0]+t[1])+(t[2]+t[3]), v[i:])
}

// scaleIntoAVX2 is scaleIntoGeneric four lanes at a time: the same
// float64 product, rounded to float32 (VCVTPD2PS rounds to nearest even,
// as Go's conversion does).
func scaleIntoAVX2(dst, v []float32, inv float64) {
	dst = dst[:len(v)]
	invs := archsimd.BroadcastFloat64x4(inv)
	i := 0
	for ; i+4 <= len(v); i += 4 {
		archsimd.LoadFloat32x4Slice(v[i:]).ConvertToFloat64().Mul(invs).ConvertToFloat32().StoreSlice(dst[i:])
	}
	archsimd.ClearAVXUpperBits()
	scaleIntoGeneric(dst[i:], v[i:], inv)
}

// maxAbsAVX2 is maxAbsGeneric eight lanes at a time, from the largest and
// the smallest component (the same value: the order does not matter).
func maxAbsAVX2(v []float32) float32 {
	var hi, lo archsimd.Float32x8
	i := 0
	for ; i+8 <= len(v); i += 8 {
		x := archsimd.LoadFloat32x8Slice(v[i:])
		hi, lo = hi.Max(x), lo.Min(x)
	}
	var h, l [8]float32
	hi.StoreSlice(h[:])
	lo.StoreSlice(l[:])
	archsimd.ClearAVXUpperBits()
	big := maxAbsGeneric(v[i:])
	for j := range 8 {
		big = max(big, h[j], -l[j])
	}
	return big
}

// quantCodesAVX2 is quantCodesGeneric four lanes at a time: the same
// float64 and float32 products, and the rounding half away from zero as
// the truncation of x+0.5 where x >= 0 and of x-0.5 below.
func quantCodesAVX2(dst []int8, v []float32, inv float64, k float32) {
	dst = dst[:len(v)]
	invs, ks := archsimd.BroadcastFloat64x4(inv), archsimd.BroadcastFloat32x4(k)
	half, zero := archsimd.BroadcastFloat64x4(0.5), archsimd.BroadcastFloat64x4(0)
	lo, hi := archsimd.BroadcastInt32x4(-quantMax), archsimd.BroadcastInt32x4(quantMax)
	var c [4]int32
	i := 0
	for ; i+4 <= len(v); i += 4 {
		x := archsimd.LoadFloat32x4Slice(v[i:]).ConvertToFloat64().Mul(invs).ConvertToFloat32().Mul(ks).ConvertToFloat64()
		r := x.Add(half).Trunc().Merge(x.Sub(half).Trunc(), x.GreaterEqual(zero))
		r.ConvertToInt32().Max(lo).Min(hi).StoreSlice(c[:])
		dst[i], dst[i+1], dst[i+2], dst[i+3] = int8(c[0]), int8(c[1]), int8(c[2]), int8(c[3])
	}
	archsimd.ClearAVXUpperBits()
	quantCodesGeneric(dst[i:], v[i:], inv, k)
}
