package client_test

import (
	"reflect"
	"testing"

	"memindex"
	"memindex/client"
)

// TestCluster: every partition up to the largest count, holders by worker
// name, the first owner chosen and a second owner counted a replica, an
// unheld partition with no holders.
func TestCluster(t *testing.T) {
	sts := []memindex.StatusResponse{
		{Worker: "w2", PartitionCount: 4, Partitions: []memindex.PartitionStatus{
			{Partition: 1, Role: memindex.RoleOwner, State: memindex.StateReady},
			{Partition: 3, Role: memindex.RoleOwner, State: memindex.StateReady, Pending: 1}}},
		{Worker: "w1", PartitionCount: 3, Partitions: []memindex.PartitionStatus{
			{Partition: 0, Role: memindex.RoleOwner, State: memindex.StateReady, LeaseValidSeconds: 2.5},
			{Partition: 1, Role: memindex.RoleReplica, State: memindex.StateCatchingUp, Pending: 40},
			{Partition: 3, Role: memindex.RoleOwner, State: memindex.StateReady, Pending: 2}}},
	}
	w1p0 := client.Holder{Worker: "w1", Role: memindex.RoleOwner, State: memindex.StateReady, LeaseValidSeconds: 2.5}
	w1p1 := client.Holder{Worker: "w1", Role: memindex.RoleReplica, State: memindex.StateCatchingUp, Pending: 40}
	w2p1 := client.Holder{Worker: "w2", Role: memindex.RoleOwner, State: memindex.StateReady}
	w1p3 := client.Holder{Worker: "w1", Role: memindex.RoleOwner, State: memindex.StateReady, Pending: 2}
	w2p3 := client.Holder{Worker: "w2", Role: memindex.RoleOwner, State: memindex.StateReady, Pending: 1}
	want := []client.PartitionView{
		{Partition: 0, Owner: &w1p0, Holders: []client.Holder{w1p0}},
		{Partition: 1, Owner: &w2p1, Replicas: []client.Holder{w1p1}, Holders: []client.Holder{w1p1, w2p1}},
		{Partition: 2},
		{Partition: 3, Owner: &w1p3, Replicas: []client.Holder{w2p3}, Holders: []client.Holder{w1p3, w2p3}},
	}
	got := client.Cluster(sts)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Cluster() =\n%+v\nwant\n%+v", got, want)
	}
	if got := client.Cluster([]memindex.StatusResponse{{Worker: "w1"}}); got != nil {
		t.Errorf("Cluster(no partition count) = %+v, want none", got)
	}
}
