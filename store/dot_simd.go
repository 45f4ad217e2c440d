//go:build goexperiment.simd && amd64

package store

import "simd/archsimd"

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
	}
	if archsimd.X86.AVX512() && archsimd.X86.AVX512VPOPCNTDQ() {
		bitCounts = bitCountsAVX512
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

// dotI8PosAVX2 is dotI8Pos with dotI8AVX2, then VZEROUPPER (see
// dotI8ManyAVX2).
func dotI8PosAVX2(abs []uint8, sq []int8, sp *vecSpace, pos []int32, dims int, out []int32) {
	out = out[:len(pos)]
	for j, p := range pos {
		out[j] = dotI8AVX2(abs, sq, sp.vec(int(p), dims))
	}
	archsimd.ClearAVXUpperBits()
}

// bitCountsAVX512 is bitCounts with AVX-512 VPOPCNTQ, eight words of a
// sketch at a time (a sketch of fewer or a number not a multiple of eight
// takes the generic loop), then VZEROUPPER.
func bitCountsAVX512(q *bitQuery, sp *vecSpace, lo, words int, out []int32) {
	if words%8 != 0 {
		bitCountsGeneric(q, sp, lo, words, out)
		return
	}
	off := (lo % blockVecs) * words
	blk := sp.bits[lo/blockVecs][off : off+len(out)*words]
	var lanes [8]uint64
	if words == 8 { // 384 or 512 dims: the planes stay in registers
		p0 := archsimd.LoadUint64x8Slice(q.planes[0])
		p1 := archsimd.LoadUint64x8Slice(q.planes[1])
		p2 := archsimd.LoadUint64x8Slice(q.planes[2])
		p3 := archsimd.LoadUint64x8Slice(q.planes[3])
		for j := range out {
			x := archsimd.LoadUint64x8Slice(blk[j*8:])
			c := x.And(p0).OnesCount().Add(x.And(p1).OnesCount().ShiftAllLeft(1)).
				Add(x.And(p2).OnesCount().ShiftAllLeft(2).Add(x.And(p3).OnesCount().ShiftAllLeft(3)))
			c.Store(&lanes)
			out[j] = int32(((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7])))
		}
		archsimd.ClearAVXUpperBits()
		return
	}
	for j := range out {
		b := blk[j*words : (j+1)*words]
		var acc archsimd.Uint64x8
		for w := 0; w < words; w += 8 {
			x := archsimd.LoadUint64x8Slice(b[w:])
			c0 := x.And(archsimd.LoadUint64x8Slice(q.planes[0][w:])).OnesCount()
			c1 := x.And(archsimd.LoadUint64x8Slice(q.planes[1][w:])).OnesCount().ShiftAllLeft(1)
			c2 := x.And(archsimd.LoadUint64x8Slice(q.planes[2][w:])).OnesCount().ShiftAllLeft(2)
			c3 := x.And(archsimd.LoadUint64x8Slice(q.planes[3][w:])).OnesCount().ShiftAllLeft(3)
			acc = acc.Add(c0.Add(c1).Add(c2.Add(c3)))
		}
		acc.Store(&lanes)
		out[j] = int32(((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7])))
	}
	archsimd.ClearAVXUpperBits()
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

// popLUT is the number of set bits of each nibble, once for each 128-bit
// lane of a VPSHUFB lookup.
var popLUT = [32]uint8{0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4}

// bitCountsAVX2 is bitCounts with AVX2 for sketches of eight words (384 or
// 512 dims; other widths take the generic loop): each byte's set bits
// counted by two nibble lookups (VPSHUFB), the four planes' counts
// weighted 8:4:2:1 within the bytes (at most 240 a byte), the bytes summed
// by VPSADBW; then VZEROUPPER. Machines without AVX-512's VPOPCNTQ (this
// project's VM today) spent about 40 ns a vector in the generic loop.
func bitCountsAVX2(q *bitQuery, sp *vecSpace, lo, words int, out []int32) {
	if words != 8 {
		bitCountsGeneric(q, sp, lo, words, out)
		return
	}
	off := (lo % blockVecs) * 8
	blk := sp.bits[lo/blockVecs][off : off+len(out)*8]
	lut := archsimd.LoadUint8x32(&popLUT)
	nib := archsimd.BroadcastUint8x32(0x0f)
	four := archsimd.BroadcastUint32x8(4)
	var zero archsimd.Uint8x32
	plane := func(k, half int) archsimd.Uint8x32 {
		return archsimd.LoadUint64x4Slice(q.planes[k][4*half:]).AsUint8x32()
	}
	p00, p01, p10, p11 := plane(0, 0), plane(0, 1), plane(1, 0), plane(1, 1)
	p20, p21, p30, p31 := plane(2, 0), plane(2, 1), plane(3, 0), plane(3, 1)
	var lanes [4]uint64
	for j := range out {
		x0 := archsimd.LoadUint64x4Slice(blk[j*8:]).AsUint8x32()
		x1 := archsimd.LoadUint64x4Slice(blk[j*8+4:]).AsUint8x32()
		acc := popBytes(x0.And(p30), lut, nib, four).Add(popBytes(x1.And(p31), lut, nib, four))
		acc = acc.Add(acc).Add(popBytes(x0.And(p20), lut, nib, four)).Add(popBytes(x1.And(p21), lut, nib, four))
		acc = acc.Add(acc).Add(popBytes(x0.And(p10), lut, nib, four)).Add(popBytes(x1.And(p11), lut, nib, four))
		acc = acc.Add(acc).Add(popBytes(x0.And(p00), lut, nib, four)).Add(popBytes(x1.And(p01), lut, nib, four))
		acc.SumAbsDiff(zero).AsUint64x4().Store(&lanes)
		out[j] = int32((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
	}
	archsimd.ClearAVXUpperBits()
}

// popBytes returns the number of set bits of each byte of y (at most 8),
// looked up nibble by nibble in lut (popLUT); nib is 0x0f in every byte,
// four 4 in every 32-bit lane. The high nibbles are shifted down by a
// shift of each lane by a vector of counts (VPSRLVD): the shift by a
// scalar count came with a legacy-SSE MOVQ of the count in the loop,
// whose transition cost three quarters of the time.
func popBytes(y, lut, nib archsimd.Uint8x32, four archsimd.Uint32x8) archsimd.Uint8x32 {
	lo := y.And(nib)
	hi := y.AsUint32x8().ShiftRight(four).AsUint8x32().And(nib)
	return lut.PermuteOrZeroGrouped(lo.AsInt8x32()).Add(lut.PermuteOrZeroGrouped(hi.AsInt8x32()))
}
