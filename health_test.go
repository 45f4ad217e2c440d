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
