package memindex

import "testing"

func TestHealthOf(t *testing.T) {
	tests := []struct {
		name string
		st   StatusResponse
		want string
	}{
		{"all well", StatusResponse{Ready: true, Embedder: EmbedderStatus{Breaker: "closed"}, Partitions: []PartitionStatus{{VectorsWaiting: 3, OldestWaitSeconds: 2}}}, HealthOK},
		{"not consuming", StatusResponse{Ready: false}, HealthDown},
		{"breaker open", StatusResponse{Ready: true, Embedder: EmbedderStatus{Breaker: "open", BreakerOpenUntil: "2026-11-30T10:00:00Z"}}, HealthDegraded},
		{"vectors lag", StatusResponse{Ready: true, Partitions: []PartitionStatus{{VectorsWaiting: 40, OldestWaitSeconds: 300}}}, HealthDegraded},
		{"partition error", StatusResponse{Ready: true, Partitions: []PartitionStatus{{Partition: 2, Error: "disk full"}}}, HealthDegraded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HealthOf(tt.st)
			if got.Status != tt.want || (tt.want != HealthOK) != (len(got.Problems) > 0) {
				t.Fatalf("HealthOf()=%+v, want status %s with problems named", got, tt.want)
			}
		})
	}
}

// TestHealthOfGoScan: partitions whose vectors run without sqlite-vec make
// health degraded (never down), with the reason and partitions in words.
func TestHealthOfGoScan(t *testing.T) {
	st := StatusResponse{Ready: true, Partitions: []PartitionStatus{
		{Partition: 0, VectorMode: VectorModeGoScan, VectorModeReason: "sqlite-vec disabled by configuration"},
		{Partition: 1, VectorMode: VectorModeSqliteVec},
		{Partition: 2, VectorMode: VectorModeGoScan, VectorModeReason: "sqlite-vec disabled by configuration"},
		{Partition: 3, VectorMode: VectorModeGoScan, VectorModeReason: "vec0 table failed: write: disk image is malformed"},
	}}
	h := HealthOf(st)
	want := "go-scan fallback: sqlite-vec disabled by configuration (partitions 0, 2); go-scan fallback: vec0 table failed: write: disk image is malformed (partition 3)"
	if h.Status != HealthDegraded || h.Vectors != want || len(h.Problems) != 1 {
		t.Fatalf("HealthOf()=%+v, want degraded with vectors %q as one problem", h, want)
	}
	st.Partitions = st.Partitions[1:2]
	if h := HealthOf(st); h.Status != HealthOK || h.Vectors != HealthOK {
		t.Fatalf("HealthOf(sqlite-vec only)=%+v, want ok", h)
	}
}

// TestHealthOfFTS5Ranking: a partition whose keyword searches FTS5 ranks
// (its keyword index loading or dropped) makes health degraded, never
// down, and says why; the keyword index in memory is ok.
func TestHealthOfFTS5Ranking(t *testing.T) {
	st := StatusResponse{Ready: true, Partitions: []PartitionStatus{
		{Partition: 0, KeywordIndex: "memory"},
		{Partition: 4, KeywordIndex: "fts5: keyword index loading"},
		{Partition: 7, KeywordIndex: "fts5: keyword index dropped: out of memory"},
	}}
	h := HealthOf(st)
	want := []string{
		"partition 4: keyword search ranked by FTS5, without the chunks' context (keyword index loading)",
		"partition 7: keyword search ranked by FTS5, without the chunks' context (keyword index dropped: out of memory)",
	}
	if h.Status != HealthDegraded || len(h.Problems) != 2 || h.Problems[0] != want[0] || h.Problems[1] != want[1] {
		t.Fatalf("HealthOf()=%+v, want degraded with %q", h, want)
	}
	st.Partitions = st.Partitions[:1]
	if h := HealthOf(st); h.Status != HealthOK {
		t.Fatalf("HealthOf(keyword index in memory)=%+v, want ok", h)
	}
}
