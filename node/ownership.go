package node

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"memindex"
	"memindex/consumer"
	"memindex/query"
	"memindex/store"
)

// Ownership: which partitions this worker holds.
//
// Static (`--partitions 0-7`, default all): the set is fixed at start and
// served at once, as a single worker always did. Dynamic (`--group NAME`):
// the worker starts with none and consumer.Leaser gains and drops them
// through leases; a gained partition is opened (rebuilt from the stream from
// its shard's applied sequence) and answers searches only once it has caught
// up. Every holder consumes into its own shard file through its own durable
// consumer (named after the worker), so replicas (`--replicas R`) each see
// every message of their partitions.

// ownership is a node's per-partition holding state.
type ownership struct {
	// initial is the static owned set (nil in a dynamic group).
	initial []int
	// ready[p]: held and caught up: this worker answers p's searches.
	ready []atomic.Bool
	// owner[p]: held as the owner (static, or lease slot 0).
	owner []atomic.Bool
	// leaser is set by startLeaser, after the query service (and its
	// status endpoint, which reads it) has started.
	leaser atomic.Pointer[consumer.Leaser]
	// leaserDone is closed when the leaser has handed everything over.
	leaserDone chan struct{}
	// moving is read-held by gain and drop for their whole run and
	// write-held by switchOver while it retires the old generation, so a
	// partition never moves while the generations change: a gain or drop
	// that read the generations before the switch finishes with the old
	// generation's shard map before switchOver takes it, and one after sees
	// only the new generation.
	moving sync.RWMutex
}

// parsePartitionSet parses --partitions: "all", or a comma-separated list of
// partitions and ranges ("0-7", "0,3,5-6"), each below count.
func parsePartitionSet(s string, count int) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		out := make([]int, count)
		for p := range count {
			out[p] = p
		}
		return out, nil
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("--partitions %q: %q is not a partition or a range like 0-7; want \"all\" or a list like 0,3,5-6", s, part)
		}
		if b >= count {
			return nil, fmt.Errorf("--partitions %q: partition %d is out of range: the stream has %d partitions (0-%d; --partition-count sets it for a new stream)", s, b, count, count-1)
		}
		for p := a; p <= b; p++ {
			seen[p] = true
		}
	}
	out := make([]int, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Ints(out)
	return out, nil
}

// nameToken makes a worker name fit a consumer name: characters outside
// [A-Za-z0-9_-] become _.
func nameToken(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

// holderPrefix is the durable consumer prefix of generation gen on this
// worker: every holder of a partition has its own consumer.
func (n *Node) holderPrefix(gen string) string {
	return consumerPrefix(gen) + "-" + nameToken(n.cfg.Worker)
}

// initOwnership sets the static owned set, checked against the stream's
// partition count.
func (n *Node) initOwnership() error {
	n.own.ready = make([]atomic.Bool, n.partitions)
	n.own.owner = make([]atomic.Bool, n.partitions)
	if n.cfg.Group != "" {
		return nil // Validate checked the group's settings
	}
	set, err := parsePartitionSet(n.cfg.Partitions, n.partitions)
	if err != nil {
		return err
	}
	n.own.initial = set
	return nil
}

// holds reports whether this worker answers partition p's searches itself.
func (n *Node) holds(p int) bool { return p >= 0 && p < len(n.own.ready) && n.own.ready[p].Load() }

// serveStatic marks the static owned set ready and subscribes its
// per-partition subjects: a static owner serves its partitions from the
// start, as a single worker always did, except a partition whose shard is
// being rebuilt from the stream (new, deleted or replaced): its searches
// would miss older data, so it answers 503 "catching up" until watchReady
// finds it caught up, as a partition gained in a group does.
func (n *Node) serveStatic() error {
	n.genMu.RLock()
	w := n.serving.worker
	n.genMu.RUnlock()
	for _, p := range n.own.initial {
		n.own.owner[p].Store(true)
		if w.Rebuilding(p) {
			n.log.Info("partition rebuilding from the stream; its searches answer 503 until it has caught up", "partition", p)
			continue
		}
		n.own.ready[p].Store(true)
		if err := n.svc.Serve(p); err != nil {
			return err
		}
	}
	return nil
}

// startLeaser joins the dynamic group.
func (n *Node) startLeaser(ctx context.Context) error {
	// The lease bucket is replicated like the event stream, so losing the
	// node that holds it does not stop the group's renewals.
	bucketReplicas := 1
	if s, err := n.js.Stream(ctx, memindex.StreamEvents); err == nil {
		bucketReplicas = max(s.CachedInfo().Config.Replicas, 1)
	}
	l, err := consumer.NewLeaser(ctx, n.js, consumer.LeaseConfig{
		Group: n.cfg.Group, Worker: n.cfg.Worker, Partitions: n.partitions,
		Replicas: max(n.cfg.Replicas, 1), TTL: n.cfg.LeaseTTL, Logger: n.log,
		BucketReplicas: bucketReplicas,
	}, consumer.LeaseHooks{Gain: n.gain, Drop: n.drop, Fence: n.fence})
	if err != nil {
		return err
	}
	n.own.leaser.Store(l)
	return nil
}

// runLeaser runs the leaser until ctx ends and it has handed every
// partition over; node.run waits for leaserDone before stopping the rest.
func (n *Node) runLeaser(ctx context.Context) {
	n.own.leaserDone = make(chan struct{})
	l := n.own.leaser.Load()
	if l == nil {
		close(n.own.leaserDone)
		return
	}
	go func() { // owned by node.run, which waits on leaserDone
		defer close(n.own.leaserDone)
		l.Run(ctx)
	}()
}

// gain opens partition p in every generation and starts consuming it from
// its shard's applied sequence (a new shard rebuilds from the stream),
// writes fenced at fence. It answers searches once watchReady finds it
// caught up.
func (n *Node) gain(ctx context.Context, p int, owner bool, fence time.Time) error {
	n.own.moving.RLock()
	defer n.own.moving.RUnlock()
	n.genMu.RLock()
	gens, newest := []*generation{n.serving, n.next}, n.newest()
	n.genMu.RUnlock()
	var added []*generation
	undo := func() {
		for _, g := range added {
			if sh, err := g.worker.Remove(context.WithoutCancel(ctx), p, true); err == nil && sh != nil {
				_ = sh.(*store.Shard).Close(context.Background())
			}
			n.genMu.Lock()
			delete(g.shards, p)
			n.genMu.Unlock()
		}
	}
	for _, g := range gens {
		if g == nil {
			continue
		}
		path := ShardPath(g.dir, p)
		if g == newest {
			if err := n.restoreFromSnapshot(ctx, p, path); err != nil {
				n.log.Warn("restore partition from a snapshot; rebuilding it from the stream", "partition", p, "err", err)
			}
		}
		sh, err := store.Open(ctx, path, n.shardConfig(g.dims, g.space))
		if errors.Is(err, store.ErrOldUnits) {
			// Windows of an older memindex: a gained partition is rebuilt
			// from the stream anyway, so start it afresh.
			n.log.Warn("shard holds session windows of an older memindex; rebuilding it from the stream", "partition", p)
			if _, err = removeShard(path); err == nil {
				sh, err = store.Open(ctx, path, n.shardConfig(g.dims, g.space))
			}
		}
		if err != nil {
			undo()
			return fmt.Errorf("gain partition %d: %w", p, err)
		}
		if err := g.worker.Add(ctx, p, sh, fence); err != nil {
			_ = sh.Close(context.Background())
			undo()
			return fmt.Errorf("gain partition %d: %w", p, err)
		}
		n.genMu.Lock()
		g.shards[p] = sh
		n.genMu.Unlock()
		added = append(added, g)
	}
	n.genMu.RLock()
	serving := map[int]*store.Shard{p: n.serving.shards[p]}
	n.genMu.RUnlock()
	if err := n.waitSegmenter(ctx, serving); err != nil {
		undo()
		return fmt.Errorf("gain partition %d: %w", p, err)
	}
	n.own.owner[p].Store(owner)
	n.genMu.RLock()
	n.setRoute(p, n.serving)
	n.genMu.RUnlock()
	n.log.Info("partition gained; catching up with the stream", "partition", p, "owner", owner)
	return nil
}

// drop stops answering and writing partition p and closes its shards. The
// fence already stops its commits when the lease ended.
func (n *Node) drop(ctx context.Context, p int, handover bool) {
	n.own.moving.RLock()
	defer n.own.moving.RUnlock()
	n.own.ready[p].Store(false)
	n.own.owner[p].Store(false)
	n.svc.Unserve(p)
	n.routes[p].Store(nil)
	n.genMu.RLock()
	gens := []*generation{n.serving, n.next}
	n.genMu.RUnlock()
	for _, g := range gens {
		if g == nil {
			continue
		}
		if _, err := g.worker.Remove(ctx, p, true); err != nil && !errors.Is(err, consumer.ErrNotHeld) {
			n.log.Error("stop partition", "partition", p, "err", err)
		}
		n.genMu.Lock()
		sh := g.shards[p]
		delete(g.shards, p)
		n.genMu.Unlock()
		if sh != nil {
			if err := sh.Close(context.Background()); err != nil {
				n.log.Error("close shard", "partition", p, "err", err)
			}
		}
	}
	n.log.Info("partition dropped", "partition", p, "handover", handover)
}

// fence moves partition p's write fence in every generation.
func (n *Node) fence(p int, until time.Time) {
	n.genMu.RLock()
	defer n.genMu.RUnlock()
	for _, g := range []*generation{n.serving, n.next} {
		if g != nil {
			g.worker.SetFence(p, until)
		}
	}
}

// caughtUp reports whether a held partition may answer searches: bound to
// its consumer, not rebuilding, and within the --ready-lag budget.
func (n *Node) caughtUp(r consumer.PartitionReadiness) bool {
	return r.Err == nil && r.Bound && !r.Rebuilding() && r.Pending <= uint64(n.cfg.ReadyLag)
}

// watchReady starts serving each held partition that does not serve yet
// (gained in a group, or rebuilding) once it has caught up.
func (n *Node) watchReady(ctx context.Context) {
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n.genMu.RLock()
		w := n.serving.worker
		n.genMu.RUnlock()
		// Only the held partitions not serving yet: once all serve, a
		// poll asks the server nothing.
		for _, r := range w.ReadinessOf(ctx, func(p int) bool { return !n.holds(p) }) {
			if !n.caughtUp(r) {
				continue
			}
			if err := n.svc.Serve(r.Partition); err != nil {
				n.log.Warn("serve partition", "partition", r.Partition, "err", err)
				continue
			}
			n.own.ready[r.Partition].Store(true)
			n.log.Info("partition caught up; serving its searches", "partition", r.Partition, "applied", r.Applied)
		}
	}
}

// readyPoll is how often gained partitions are checked for having caught up.
const readyPoll = 200 * time.Millisecond

// ownershipStatus fills the ownership fields of a status answer.
func (n *Node) ownershipStatus(resp *memindex.StatusResponse) {
	resp.PartitionCount = n.partitions
	resp.Group = n.cfg.Group
	resp.Replicas = max(n.cfg.Replicas, 1)
	var leases map[int]consumer.LeaseState
	if l := n.own.leaser.Load(); l != nil {
		leases, resp.GroupMembers = l.Leases()
	}
	for i := range resp.Partitions {
		ps := &resp.Partitions[i]
		p := ps.Partition
		ps.State = memindex.StateCatchingUp
		if n.holds(p) {
			ps.State = memindex.StateReady
		}
		ps.Role = memindex.RoleReplica
		if p < len(n.own.owner) && n.own.owner[p].Load() {
			ps.Role = memindex.RoleOwner
		}
		if l, ok := leases[p]; ok {
			ps.LeaseValidSeconds = max(0, time.Until(l.Valid).Seconds())
			ps.LeaseRevision = l.Revision
			if l.Owner { // gained as a replica, promoted since (consumer/lease_replicas.go)
				ps.Role = memindex.RoleOwner
			}
		}
	}
}

// notHeld is the router's error for a partition this worker does not hold
// (a request that raced a hand-over).
func (n *Node) notHeld(p int) error {
	return fmt.Errorf("partition %d is not held by worker %s: it is moving between workers; retry: %w", p, n.cfg.Worker, query.ErrNotReady)
}
