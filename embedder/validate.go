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
		zero := true
		for j, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("vector %d component %d is %v: %w", i, j, x, ErrBadVector)
			}
			if x != 0 {
				zero = false
			}
		}
		if zero {
			return fmt.Errorf("vector %d is all zero: %w", i, ErrBadVector)
		}
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
