package bench

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"memindex/store"
)

// TestTopNKeepsTheBest checks the top-10 the vector suite's scans use
// against a full sort.
func TestTopNKeepsTheBest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 3, 10, 11, 1000} {
		scores := make([]float32, n)
		var top topN
		for i := range scores {
			scores[i] = r.Float32()
			top.push(int64(i), scores[i])
		}
		idx := make([]int64, n)
		for i := range idx {
			idx[i] = int64(i)
		}
		slices.SortFunc(idx, func(a, b int64) int {
			switch {
			case scores[a] > scores[b]:
				return -1
			case scores[a] < scores[b]:
				return 1
			}
			return 0
		})
		want := idx[:min(n, vecK)]
		if got := top.ids(); !slices.Equal(got, want) {
			t.Errorf("n=%d: topN = %v, want %v", n, got, want)
		}
	}
}

// TestGoScanIsExact checks the bandwidth-bound variant, which every other
// variant's recall is measured against, against a scalar scan.
func TestGoScanIsExact(t *testing.T) {
	const n = 25000 // above the split into GOMAXPROCS parts
	data := benchVectors(7, n)
	q := benchVectors(8, 1)
	got, err := goScanVariant(data).search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var want topN
	for i := 0; i < n; i++ {
		var s float32
		for j := range q {
			s += q[j] * data[i*vecDims+j]
		}
		want.push(int64(i+1), s)
	}
	if !slices.Equal(got, want.ids()) {
		t.Fatalf("go-scan top 10 = %v, want %v (dot %s)", got, want.ids(), store.DotKind())
	}
}
