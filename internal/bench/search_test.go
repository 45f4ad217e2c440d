package bench

import (
	"math"
	"testing"
)

// TestSearchTailIsTheSlowestPercent: the tail is the mean of the slowest
// 1 % of the worker's answers by client time (at least one), whatever their
// order, and there is none for a floor's answers.
func TestSearchTailIsTheSlowestPercent(t *testing.T) {
	var as []timedAnswer
	for i := range 300 {
		ms := float64(i%100) + 1 // 1..100, three of each
		as = append(as, timedAnswer{searchAnswer{worker: true, workerMs: ms - 1, vectorMs: ms - 2, keywordMs: 1}, ms})
	}
	as[17].clientMs, as[17].workerMs, as[17].vectorMs = 500, 480, 470 // the slowest, not last
	got := searchTail(as)
	// The slowest 3: 500 (vector 470) and two of 100 (vector 98).
	want := SearchTail{Queries: 3, ClientMs: 700.0 / 3, WorkerMs: (480 + 99 + 99) / 3.0, VectorMs: (470 + 98 + 98) / 3.0, KeywordMs: 1}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if got == nil || got.Queries != want.Queries || !near(got.ClientMs, want.ClientMs) || !near(got.WorkerMs, want.WorkerMs) ||
		!near(got.VectorMs, want.VectorMs) || !near(got.KeywordMs, want.KeywordMs) {
		t.Fatalf("searchTail = %+v, want %+v", got, want)
	}
	if one := searchTail(as[:5]); one == nil || one.Queries != 1 || one.ClientMs != 5 {
		t.Fatalf("searchTail of 5 answers = %+v, want the slowest one (5 ms)", one)
	}
	if floor := searchTail([]timedAnswer{{clientMs: 3}}); floor != nil {
		t.Fatalf("searchTail of a floor's answers = %+v, want nil", floor)
	}
}
