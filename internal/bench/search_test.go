package bench

import (
	"math"
	"strings"
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

// TestSearchWorkerPercentiles: the worker's own p50 and p99 (and each
// leg's p50) are taken over its answers whatever their order, none for a
// floor's; the search table shows them beside the client's, a dash for a
// floor; CPU and page faults a query are shown for every system.
func TestSearchWorkerPercentiles(t *testing.T) {
	var as []timedAnswer
	for i := range 100 {
		ms := float64((i*37)%100 + 1) // 1..100 in no order
		as = append(as, timedAnswer{searchAnswer{worker: true, workerMs: ms, vectorMs: ms / 2, keywordMs: ms / 4}, ms + 3})
	}
	got := searchWorker(as)
	if got == nil || got.P50Ms != 50 || got.P99Ms != 99 || got.VectorP50Ms != 25 || got.KeywordP50Ms != 12.5 {
		t.Fatalf("searchWorker = %+v, want p50 50, p99 99, vector p50 25, keyword p50 12.5", got)
	}
	if floor := searchWorker([]timedAnswer{{clientMs: 3}}); floor != nil {
		t.Fatalf("searchWorker of a floor's answers = %+v, want nil", floor)
	}
	var b strings.Builder
	writeSearchTable(&b, []SearchFigure{
		{Chunks: 1000000, Mode: "hybrid", Queries: 300, P50Ms: 13.4, P90Ms: 20.5, P99Ms: 45.1, MaxMs: 55.4, Worker: got, CPUMsPerQuery: 21.5, FaultsPerQuery: 312.25},
		{Chunks: 1000000, Mode: SearchFloorScan, Queries: 171, P50Ms: 340.6, P90Ms: 427.2, P99Ms: 518.2, MaxMs: 542.3, CPUMsPerQuery: 351, FaultsPerQuery: 0.5},
	})
	for _, want := range []string{
		"| p50 ms | p90 ms | p99 ms | max ms | degraded | worker's own p50 / p99 ms | CPU ms a query | page faults a query |",
		"| 1,000,000 | hybrid | 300 | 13.4 | 20.5 | 45.1 | 55.4 | 0 | 50.0 / 99.0 | 21.5 | 312.2 |",
		"| 1,000,000 | " + SearchFloorScan + " | 171 | 341 | 427 | 518 | 542 | 0 | — | 351 | 0.5 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("search table lacks %q:\n%s", want, b.String())
		}
	}
}
