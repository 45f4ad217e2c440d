package main

import (
	"slices"
	"strings"
	"testing"

	"memindex"
)

func TestPrintClusterShowsOwnersReplicasAndOrphans(t *testing.T) {
	sts := []memindex.StatusResponse{
		{Worker: "w1", PartitionCount: 3, Partitions: []memindex.PartitionStatus{
			{Partition: 0, Role: memindex.RoleOwner, State: memindex.StateReady, LeaseValidSeconds: 2.5},
			{Partition: 1, Role: memindex.RoleReplica, State: memindex.StateCatchingUp, Pending: 40}}},
		{Worker: "w2", PartitionCount: 3, Partitions: []memindex.PartitionStatus{
			{Partition: 1, Role: memindex.RoleOwner, State: memindex.StateReady}}},
	}
	var b strings.Builder
	printCluster(&b, sts)
	out := b.String()
	if !strings.Contains(out, "cluster: 3 partitions, 2 workers") {
		t.Errorf("printCluster output lacks the header:\n%s", out)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			rows[f[0]] = f[1:]
		}
	}
	for p, want := range map[string][]string{
		"0": {"w1", "0", "2.5s"},
		"1": {"w2", "w1", "(catching", "up)", "40", "0"},
		"2": {"NONE"},
	} {
		if got := rows[p]; len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			t.Errorf("printCluster row of partition %s = %q, want it to start %q:\n%s", p, got, want, out)
		}
	}
}
