package store

import (
	"math"
	"math/rand/v2"
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
