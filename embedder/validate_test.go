package embedder

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestCheckVectors(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name    string
		vecs    [][]float32
		n, dims int
		ok      bool
	}{
		{"valid", [][]float32{{1, 0}, {0.6, 0.8}}, 2, 2, true},
		{"none asked, none given", nil, 0, 3, true},
		{"unknown dims, consistent", [][]float32{{1, 0, 0}, {0, 1, 0}}, 2, 0, true},
		{"not normalised is fine", [][]float32{{3, 4}}, 1, 2, true},
		{"too few", [][]float32{{1, 0}}, 2, 2, false},
		{"too many", [][]float32{{1, 0}, {0, 1}}, 1, 2, false},
		{"short vector", [][]float32{{1, 0}, {1}}, 2, 2, false},
		{"long vector", [][]float32{{1, 0, 0}}, 1, 2, false},
		{"unknown dims, inconsistent", [][]float32{{1, 0}, {1, 0, 0}}, 2, 0, false},
		{"unknown dims, empty", [][]float32{{}}, 1, 0, false},
		{"NaN", [][]float32{{1, nan}}, 1, 2, false},
		{"+Inf", [][]float32{{inf, 0}}, 1, 2, false},
		{"-Inf", [][]float32{{0, -inf}}, 1, 2, false},
		{"all zero", [][]float32{{1, 0}, {0, 0}}, 2, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckVectors(tt.vecs, tt.n, tt.dims)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckVectors()=%v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBadVector) {
				t.Fatalf("CheckVectors()=%v, want it to wrap ErrBadVector", err)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   []float32
		want []float32
	}{
		{"scales", []float32{3, 4}, []float32{0.6, 0.8}},
		{"unit unchanged", []float32{0, 1}, []float32{0, 1}},
		{"negative", []float32{-2, 0}, []float32{-1, 0}},
		{"zero left alone", []float32{0, 0}, []float32{0, 0}},
		{"empty", []float32{}, []float32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := append([]float32(nil), tt.in...)
			Normalize(v)
			for i := range v {
				if math.Abs(float64(v[i]-tt.want[i])) > 1e-6 {
					t.Fatalf("Normalize(%v)=%v, want %v", tt.in, v, tt.want)
				}
			}
		})
	}
	v := []float32{float32(math.NaN()), 1}
	Normalize(v)
	if !math.IsNaN(float64(v[0])) || v[1] != 1 {
		t.Fatalf("Normalize(NaN, 1)=%v, want it unchanged", v)
	}
}

// checkVectorsFloat64 is CheckVectors as it was, testing each component as
// a float64: the oracle of TestCheckVectorsAgreesWithFloatTests.
func checkVectorsFloat64(vecs [][]float32, n, dims int) error {
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

// CheckVectors reads bits, not floats: on vectors of random bit patterns,
// special values, signed zeros and subnormals it gives the float tests'
// verdict and message.
func TestCheckVectorsAgreesWithFloatTests(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, 1}
	for range 20000 {
		dims := 1 + r.IntN(8)
		vecs := make([][]float32, 1+r.IntN(3))
		for i := range vecs {
			vecs[i] = make([]float32, dims)
			for j := range vecs[i] {
				switch r.IntN(4) {
				case 0:
					vecs[i][j] = math.Float32frombits(r.Uint32())
				case 1, 2:
					vecs[i][j] = specials[r.IntN(len(specials))]
				}
			}
		}
		got, want := CheckVectors(vecs, len(vecs), dims), checkVectorsFloat64(vecs, len(vecs), dims)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("CheckVectors(%v) = %v, float tests %v", vecs, got, want)
		}
	}
}

func BenchmarkCheckVectors(b *testing.B) {
	v := make([]float32, 384)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	vecs := [][]float32{v}
	b.Run("bits", func(b *testing.B) {
		for b.Loop() {
			if err := CheckVectors(vecs, 1, 384); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("float64", func(b *testing.B) {
		for b.Loop() {
			if err := checkVectorsFloat64(vecs, 1, 384); err != nil {
				b.Fatal(err)
			}
		}
	})
}
