package consumer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Rebalancing a group with read replicas (R > 1), where a worker holds at
// most one slot of a partition: a replica takes over its partition's free
// owner slot (promote), and a member that can take no free slot because it
// holds all their partitions gets one through a swap (unstarve).

// promote moves this worker's replica leases up to slot 0 when their
// partition's owner lease is free (the owner left or died): the replica has
// the partition caught up, so it becomes the owner at once and keeps its
// shard, instead of another worker claiming slot 0 and rebuilding one, and
// a partition whose holders are all replicas does not stay without an
// owner. The replica slot it leaves is deleted, for another worker to
// claim.
func (l *Leaser) promote(ctx context.Context, taken map[string]bool) {
	for _, h := range l.heldLeases() {
		l.promoteOne(ctx, h, taken)
	}
}

// promoteOne promotes h (see promote) when it is a replica lease and its
// partition's owner slot is free.
//
// A lease busy with another operation is left to the next tick: it may be
// a renewal that found the lease lost and is running a Drop that takes
// its time, and the main loop waiting on it would claim nothing meanwhile
// (TestTheMainLoopDoesNotWaitForABusyLease).
func (l *Leaser) promoteOne(ctx context.Context, h *heldLease, taken map[string]bool) {
	if !h.op.TryLock() {
		return
	}
	defer h.op.Unlock()
	key := leaseKey(h.p, 0)
	if h.gone || h.slot == 0 || taken[key] || ctx.Err() != nil {
		return
	}
	begin := time.Now()
	v, _ := json.Marshal(leaseValue{Worker: l.cfg.Worker, Slot: 0, At: begin.UTC()})
	rev, err := l.kv.Create(ctx, key, v)
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) && ctx.Err() == nil {
			l.log.Warn("promote a replica lease to the partition's owner", attrPartition, h.p, attrErr, err)
		}
		return
	}
	taken[key] = true
	l.mu.Lock()
	oldKey, oldRev, oldSlot := h.key, h.rev, h.slot
	h.slot, h.key, h.rev, h.valid = 0, key, rev, begin.Add(l.cfg.TTL/2)
	l.mu.Unlock()
	l.hooks.Fence(h.p, h.valid)
	if err := l.kv.Delete(ctx, oldKey, jetstream.LastRevision(oldRev)); err != nil {
		l.log.Warn("release the replica lease after a promotion; it expires after the TTL", attrPartition, h.p, attrErr, err)
	}
	l.log.Info("replica promoted to the partition's owner", attrPartition, h.p, "from_slot", oldSlot)
}

// replicaTaken reports whether a replica slot of partition p is held: its
// holder promotes itself when slot 0 is free, so others leave slot 0 to it.
func (l *Leaser) replicaTaken(p int, taken map[string]bool) bool {
	for slot := 1; slot < l.cfg.Replicas; slot++ {
		if taken[leaseKey(p, slot)] {
			return true
		}
	}
	return false
}

// unstarve breaks a dead end of the fair share with replicas. A member
// below its share that already holds every partition with a free slot can
// take none of them (a worker holds one slot of a partition), while the
// members that could take them are at their share: this happens when
// several members hand over slots of the same partition at once, as both
// holders of the highest partition do when a third worker joins two. A
// member at its share then swaps: it takes one such free slot and hands
// over a lease of a partition the starved member does not hold, which that
// member claims next. Whether a member is starved is read from the bucket
// (its heartbeat's partitions, confirmed by the leases' values), so a dead
// member, whose leases are gone, is not taken for a starved one.
func (l *Leaser) unstarve(ctx context.Context, fair int, taken map[string]bool, members []string) {
	if l.count() < fair || ctx.Err() != nil {
		return
	}
	var free [][2]int // partition, slot
	for p := range l.cfg.Partitions {
		for slot := range l.cfg.Replicas {
			if !taken[leaseKey(p, slot)] {
				free = append(free, [2]int{p, slot})
			}
		}
	}
	if len(free) == 0 {
		return
	}
	for _, m := range members {
		if m == memberKeyPrefix+l.self {
			continue
		}
		e, err := l.kv.Get(ctx, m)
		if err != nil {
			continue
		}
		var v leaseValue
		if json.Unmarshal(e.Value(), &v) != nil || len(v.Held) >= fair {
			continue
		}
		holds := map[int]bool{}
		for _, p := range v.Held {
			holds[p] = true
		}
		if !l.starved(ctx, v.Worker, holds, free) {
			continue
		}
		var want *[2]int
		for i, f := range free {
			if l.claimable(f[0], f[1], taken) {
				want = &free[i]
				break
			}
		}
		var give *heldLease
		held := l.heldLeases() // by partition; hand over a replica slot first, then the highest partition
		slices.SortStableFunc(held, func(a, b *heldLease) int {
			if c := cmp.Compare(b.slot, a.slot); c != 0 {
				return c
			}
			return cmp.Compare(b.p, a.p)
		})
		for _, h := range held {
			if !holds[h.p] {
				give = h
				break
			}
		}
		if want == nil || give == nil {
			return
		}
		if l.take(ctx, want[0], want[1], taken) {
			l.log.Info("handing a partition over to a member that can take no free slot", attrPartition, give.p,
				"slot", give.slot, "member", v.Worker, "took_partition", want[0])
			l.release(ctx, give)
		}
		return // one swap a tick
	}
}

// starved reports whether worker holds a lease of every partition with a
// free slot, as the leases' values say: it can claim none of them.
func (l *Leaser) starved(ctx context.Context, worker string, holds map[int]bool, free [][2]int) bool {
	checked := map[int]bool{}
	for _, f := range free {
		p := f[0]
		if !holds[p] {
			return false
		}
		if checked[p] {
			continue
		}
		checked[p] = true
		found := false
		for slot := range l.cfg.Replicas {
			e, err := l.kv.Get(ctx, leaseKey(p, slot))
			if err != nil {
				continue
			}
			var v leaseValue
			if json.Unmarshal(e.Value(), &v) == nil && v.Worker == worker {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
