package embedder

import (
	"fmt"
	"math"
)

// CheckVectors reports whether vecs is a usable answer to a request of n
// texts embedded in dims dimensions: exactly n vectors, each of length dims,
// with only finite components and not all zero. When dims <= 0 the length is
// not known in advance and only has to be non-zero and the same for every
// vector. The error wraps ErrBadVector and names the first offending vector.
//
// CheckVectors does not require unit length: normalise with Normalize.
func CheckVectors(vecs [][]float32, n, dims int) error {
	if len(vecs) != n {
		return fmt.Errorf("got %d vectors for %d texts: %w", len(vecs), n, ErrBadVector)
	}
	for i, v := range vecs {
		want := dims
		if want <= 0 {
			want = len(vecs[0])
			if want == 0 {
				return fmt.Errorf("vector 0 is empty: %w", ErrBadVector)
			}
		}
		if len(v) != want {
			return fmt.Errorf("vector %d has %d dimensions, want %d: %w", i, len(v), want, ErrBadVector)
		}
		if err := checkComponents(v); err != nil {
			return fmt.Errorf("vector %d %w", i, err)
		}
	}
	return nil
}

// checkComponents says what is wrong with v's components: one is NaN or
// infinite (the first named), or all are zero (+0 or -0). It reads each
// component's bits once (a float32 is NaN or infinite when its exponent
// bits are all set) and looks for the first bad component only when there
// is one: it runs on every vector a batch embeds.
func checkComponents(v []float32) error {
	const expMask, absMask = 0x7f800000, 0x7fffffff
	var special bool
	var nonzero uint32
	for _, x := range v {
		b := math.Float32bits(x)
		if b&expMask == expMask {
			special = true
		}
		nonzero |= b & absMask
	}
	if special {
		for j, x := range v {
			if b := math.Float32bits(x); b&expMask == expMask {
				return fmt.Errorf("component %d is %v: %w", j, x, ErrBadVector)
			}
		}
	}
	if nonzero == 0 {
		return fmt.Errorf("is all zero: %w", ErrBadVector)
	}
	return nil
}

// Normalize scales v in place to unit L2 norm. A zero vector, or one with a
// NaN or infinite component, is left unchanged: check with CheckVectors
// first. The sum is accumulated in float64, so the result does not depend on
// the platform fusing multiply-adds.
func Normalize(v []float32) {
	var sum float64
	for _, x := range v {
		f := float64(x)
		sum += f * f // float32*float32 is exact in float64, so fusing cannot change it
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}
