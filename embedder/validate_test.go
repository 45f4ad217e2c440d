package embedder

import (
	"errors"
	"math"
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
