package client

import (
	"slices"
	"strings"

	"memindex"
)

// Holder is one worker's hold on a partition, from its status.
type Holder struct {
	Worker string
	Role   string // memindex.RoleOwner or RoleReplica
	State  string // memindex.StateReady, StateCatchingUp, ...
	// Pending is the partition's lag at this worker: events not yet
	// applied.
	Pending uint64
	// LeaseValidSeconds is how long the worker's lease still holds (a
	// group member's; 0 for a static worker).
	LeaseValidSeconds float64
}

// PartitionView is one partition as the workers' statuses show it.
type PartitionView struct {
	Partition int
	// Owner is the first holder, by worker name, whose role is owner; nil
	// when none is (no holder, or replicas only).
	Owner *Holder
	// Replicas are the other holders, by worker name.
	Replicas []Holder
	// Holders are all of them, by worker name.
	Holders []Holder
}

// Cluster returns every partition of sts (0 to the largest PartitionCount
// a worker reports; none when no worker reports one) with its holders: the
// cluster view `memindex status` prints for a group or several workers. A
// partition no worker holds has no holders: its searches fail with 503.
func Cluster(sts []memindex.StatusResponse) []PartitionView {
	byPart := map[int][]Holder{}
	count := 0
	for _, s := range sts {
		count = max(count, s.PartitionCount)
		for _, p := range s.Partitions {
			byPart[p.Partition] = append(byPart[p.Partition], Holder{s.Worker, p.Role, p.State, p.Pending, p.LeaseValidSeconds})
		}
	}
	var out []PartitionView
	for p := range count {
		hs := byPart[p]
		slices.SortFunc(hs, func(a, b Holder) int { return strings.Compare(a.Worker, b.Worker) })
		v := PartitionView{Partition: p, Holders: hs}
		for i, h := range hs {
			if h.Role == memindex.RoleOwner && v.Owner == nil {
				v.Owner = &hs[i]
			} else {
				v.Replicas = append(v.Replicas, h)
			}
		}
		out = append(out, v)
	}
	return out
}
