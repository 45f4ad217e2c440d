package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDotMatchesGeneric checks the dot product in use (SIMD where built
// and supported) against the scalar one on lengths around the unroll sizes.
func TestDotMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 384, 385, 1536} {
		a, b := make([]float32, n), make([]float32, n+3)
		for i := range a {
			a[i] = r.Float32()*2 - 1
		}
		for i := range b {
			b[i] = r.Float32()*2 - 1
		}
		got, want := dot(a, b), dotGeneric(a, b)
		if math.Abs(float64(got-want)) > 1e-4*math.Max(1, math.Abs(float64(want))) {
			t.Fatalf("dot (%s), n=%d: %v, want %v", dotKind, n, got, want)
		}
	}
	t.Logf("dot in use: %s", dotKind)
}

// TestDotI8MatchesGeneric checks the int8 dot product in use against the
// scalar one, with codes at the extremes (±127 everywhere: the largest
// pair sums the SIMD version adds in int16).
func TestDotI8MatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 31, 32, 33, 63, 64, 65, 96, 384, 385, 1536} {
		for _, extreme := range []bool{false, true} {
			q, c := make([]int8, n), make([]int8, n+5)
			for i := range q {
				q[i] = int8(r.IntN(255) - 127)
				if extreme {
					q[i] = 127 * int8(1-2*r.IntN(2))
				}
			}
			for i := range c {
				c[i] = int8(r.IntN(255) - 127)
				if extreme {
					c[i] = 127 * int8(1-2*r.IntN(2))
				}
			}
			abs := make([]uint8, n)
			for i, v := range q {
				abs[i] = uint8(max(v, -v))
			}
			if got, want := dotI8(abs, q, c), dotI8Generic(abs, q, c); got != want {
				t.Fatalf("dotI8 (%s), n=%d extreme=%v: %d, want %d", dotKind, n, extreme, got, want)
			}
			var want int32
			for i := range q {
				want += int32(q[i]) * int32(c[i])
			}
			if got := dotI8Generic(abs, q, c); got != want {
				t.Fatalf("dotI8Generic, n=%d: %d, want %d", n, got, want)
			}
		}
	}
}

func BenchmarkDotI8(b *testing.B) {
	q, c, abs := make([]int8, 384), make([]int8, 384), make([]uint8, 384)
	for i := range q {
		q[i], c[i] = int8(i%255-127), int8((i*7)%255-127)
		abs[i] = uint8(max(q[i], -q[i]))
	}
	for _, k := range []struct {
		name string
		f    func(abs []uint8, q, c []int8) int32
	}{{"generic", dotI8Generic}, {dotKind, dotI8}} {
		b.Run("dims=384/"+k.name, func(b *testing.B) {
			var s int32
			for b.Loop() {
				s += k.f(abs, q, c)
			}
			_ = s
		})
	}
}

// BenchmarkDotI8Pos scores scattered positions as the sketch's pool does
// at 1M: 2 % of 262,144 vectors of 384 dims (96 MiB of codes, past the
// caches), ascending, with the kernel in use and one vector at a time.
func BenchmarkDotI8Pos(b *testing.B) {
	const dims, n = 384, 64 * blockVecs
	r := rand.New(rand.NewPCG(15, 16))
	sp := &vecSpace{}
	for range n / blockVecs {
		blk := make([]int8, blockVecs*dims)
		for i := range blk {
			blk[i] = int8(r.IntN(255) - 127)
		}
		sp.blocks = append(sp.blocks, blk)
	}
	q, abs := make([]int8, dims), make([]uint8, dims)
	for i := range q {
		q[i] = int8(r.IntN(255) - 127)
		abs[i] = uint8(max(q[i], -q[i]))
	}
	var pos []int32
	for p := range n {
		if r.IntN(50) == 0 {
			pos = append(pos, int32(p))
		}
	}
	out := make([]int32, len(pos))
	for _, k := range []struct {
		name string
		f    func([]uint8, []int8, *vecSpace, []int32, int, []int32)
	}{{"in-use", dotI8Pos}, {"one-at-a-time", dotI8PosGeneric}} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				k.f(abs, q, sp, pos, dims, out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pos)), "ns/vector")
		})
	}
}

func BenchmarkDot(b *testing.B) {
	a, v := make([]float32, 384), make([]float32, 384)
	for i := range a {
		a[i], v[i] = float32(i%7)/7, float32(i%5)/5
	}
	for _, c := range []struct {
		name string
		f    func(a, b []float32) float32
	}{{"generic", dotGeneric}, {dotKind, dot}} {
		b.Run("dims=384/"+c.name, func(b *testing.B) {
			var s float32
			for b.Loop() {
				s += c.f(a, v)
			}
			_ = s
		})
	}
}

// TestDotI8ManyMatchesGeneric checks the run and position kernels in use
// (AVX2 where built and supported) against the scalar dot product one
// vector at a time, for dims around the SIMD steps and with codes at the
// extremes.
func TestDotI8ManyMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, dims := range []int{1, 31, 64, 100, 128, 192, 384, 385, 1536, 3000} {
		for _, extreme := range []bool{false, true} {
			code := func() int8 {
				if extreme {
					return 127 * int8(1-2*r.IntN(2))
				}
				return int8(r.IntN(255) - 127)
			}
			q := make([]int8, dims)
			abs := make([]uint8, dims)
			for i := range q {
				q[i] = code()
				if i%17 == 0 {
					q[i] = 0
				}
				abs[i] = uint8(max(q[i], -q[i]))
			}
			const n = 37
			x := newVectorIndex(dims, -1)
			var ops []indexOp
			for i := range n {
				v := make([]float32, dims)
				for d := range v {
					v[d] = float32(code())
				}
				ops = append(ops, indexOp{add: true, ns: "ns", rowid: int64(i + 1), entry: vecEntry{id: fmt.Sprint(i), vec: v}})
			}
			x.apply(ops)
			sp := x.spaces["ns"]
			codes := sp.blocks[0]
			want := make([]int32, n)
			for j := range want {
				want[j] = dotI8Generic(abs, q, codes[j*dims:])
			}
			got := make([]int32, n)
			dotI8Many(abs, q, codes, dims, got)
			if !slices.Equal(got, want) {
				t.Fatalf("dotI8Many (%s), dims %d extreme=%v: %v, want %v", dotKind, dims, extreme, got[:3], want[:3])
			}
			pos := []int32{36, 0, 5, 5, 20, 1, 2, 33, 36, 7, 19} // two fours and a tail of three
			got = make([]int32, len(pos))
			dotI8Pos(abs, q, sp, pos, dims, got)
			for j, p := range pos {
				if got[j] != want[p] {
					t.Fatalf("dotI8Pos (%s), dims %d extreme=%v, position %d: %d, want %d", dotKind, dims, extreme, p, got[j], want[p])
				}
			}
		}
	}
}

// TestSIMDQuantizeMatchesGeneric checks the norm, scaling, largest
// component and codes in use (SIMD where built and supported) against the
// scalar versions bit for bit: a vector gets the same unit vector and the
// same codes either way, on lengths around the lane counts, with
// components of every magnitude and codes that fall on halves.
func TestSIMDQuantizeMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var vs [][]float32
	for _, n := range []int{1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 100, 384, 385, 1536} {
		for kind := range 4 {
			v := make([]float32, n)
			for i := range v {
				switch kind {
				case 0:
					v[i] = r.Float32()*2 - 1
				case 1: // magnitudes from 1e-30 to 1e30
					v[i] = float32(math.Pow(10, r.Float64()*60-30)) * float32(1-2*r.IntN(2))
				case 2: // codes on halves
					v[i] = float32(r.IntN(255)-127) / 2
				case 3:
					v[i] = float32(r.NormFloat64())
				}
			}
			if kind == 2 {
				v[r.IntN(n)] = 127.0 / 2
			}
			vs = append(vs, v)
		}
	}
	vs = append(vs, []float32{3e38, -3e38, 1, 2, 3, 4, 5, 6, 7}, make([]float32, 9), []float32{0, 0, 0, 0, 0, 0, 0, 0, -1e-45})
	for n, v := range vs {
		ss, wantSS := sumSquares(v), sumSquaresGeneric(v)
		if math.Float64bits(ss) != math.Float64bits(wantSS) {
			t.Fatalf("vector %d (%d dims): sum of squares %v (%s), want %v", n, len(v), ss, dotKind, wantSS)
		}
		if got, want := maxAbs(v), maxAbsGeneric(v); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("vector %d (%d dims): largest component %v (%s), want %v", n, len(v), got, dotKind, want)
		}
		if ss == 0 || math.IsInf(ss, 0) {
			continue
		}
		inv := 1 / math.Sqrt(ss)
		got, want := make([]float32, len(v)), make([]float32, len(v))
		scaleInto(got, v, inv)
		scaleIntoGeneric(want, v, inv)
		if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Fatalf("vector %d (%d dims): unit vector %v (%s), want %v", n, len(v), got, dotKind, want)
		}
		m := float32(float64(maxAbsGeneric(v)) * inv)
		if m == 0 {
			continue
		}
		gc, wc := make([]int8, len(v)), make([]int8, len(v))
		quantCodes(gc, v, inv, quantMax/m)
		quantCodesGeneric(wc, v, inv, quantMax/m)
		if !slices.Equal(gc, wc) {
			t.Fatalf("vector %d (%d dims): codes %v (%s), want %v", n, len(v), gc, dotKind, wc)
		}
	}
	t.Logf("in use: %s", dotKind)
}
