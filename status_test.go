package memindex

import "testing"

func TestStatusTotal(t *testing.T) {
	st := StatusResponse{Partitions: []PartitionStatus{
		{Partition: 0, Messages: 3, Chunks: 2, VectorsWaiting: 1, OldestWaitSeconds: 5, DLQ: 1, Pending: 4},
		{Partition: 1, Messages: 7, Chunks: 1, OldestWaitSeconds: 9, RecordsMerged: 2},
	}}
	got := st.Total()
	want := PartitionStatus{Partition: -1, Messages: 10, Chunks: 3, VectorsWaiting: 1, OldestWaitSeconds: 9, DLQ: 1, Pending: 4, RecordsMerged: 2}
	if got != want {
		t.Fatalf("Total()=%+v, want %+v", got, want)
	}
}
