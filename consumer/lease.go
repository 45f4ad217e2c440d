package consumer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// Partition leases of a dynamic group (`memindex serve --group NAME`).
//
// The workers of a group share one JetStream key-value bucket,
// LeaseBucket(group), whose TTL is the lease TTL: a key not written again
// within TTL disappears. Each worker puts members.<worker> every renewal
// interval (membership) and holds partitions through keys
// leases.<partition>.<slot>, slot 0..R-1 for R holders of each partition
// (slot 0 is the partition's owner, the others read replicas; a worker
// holds at most one slot of a partition). A claim is a KV Create (it fails
// when the key exists); a renewal is an Update with the revision this
// worker wrote last (it fails when anyone else wrote the key since); a
// hand-over is a Delete with that revision. When a partition's owner slot
// is free and a replica holds it, that replica is promoted (it creates slot
// 0, then deletes its own slot) and the others leave slot 0 to it, so the
// owner is a caught-up holder at once and the rebuild falls to the new
// replica.
//
// Fencing: a lease is valid by the holder's own clock until TTL/2 after the
// start of its last successful write, and the worker's commits for the
// partition stop at that instant (Worker.SetFence), while the server lets
// another worker claim the key only TTL after that write. A holder that
// loses its lease, or cannot renew it, has stopped writing before anyone
// else may start.

// LeaseBucket returns the KV bucket of group's leases.
func LeaseBucket(group string) string { return "MEMINDEX_LEASES_" + group }

// Lease key prefixes in a group's bucket.
const (
	memberKeyPrefix = "members."
	leaseKeyPrefix  = "leases."
)

// DefaultLeaseTTL is the lease TTL of a group when none is configured.
const DefaultLeaseTTL = 15 * time.Second

// LeaseConfig configures a Leaser.
type LeaseConfig struct {
	// Group names the dynamic group: [A-Za-z0-9_-]{1,64} (required).
	Group string
	// Worker is this worker's name, unique in the group (required).
	Worker string
	// Partitions is P, the partition count of the event stream (required).
	Partitions int
	// Replicas is R, how many workers hold each partition (default 1).
	Replicas int
	// TTL is how long a lease lasts without renewal (default
	// DefaultLeaseTTL); a worker stops writing a partition TTL/2 after its
	// last successful renewal.
	TTL time.Duration
	// Renew is how often leases are renewed and the share rebalanced
	// (default TTL/6).
	Renew time.Duration
	// BucketReplicas is the KV bucket's replica count (default 1).
	BucketReplicas int
	// Logger receives lease changes; nil discards them.
	Logger *slog.Logger
}

// Validate fills defaults and checks the values; errors name the flag.
func (c *LeaseConfig) Validate() error {
	if !memindex.ValidNamespace(c.Group) {
		return fmt.Errorf("--group %q: want 1-64 characters of [A-Za-z0-9_-]", c.Group)
	}
	if c.Worker == "" {
		return errors.New("--worker: a worker of a group needs a name unique in the group")
	}
	if c.Partitions < 1 {
		return fmt.Errorf("lease config: partition count must be positive, got %d", c.Partitions)
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Replicas < 1 {
		return fmt.Errorf("--replicas %d: want 1 or more holders per partition", c.Replicas)
	}
	if c.TTL == 0 {
		c.TTL = DefaultLeaseTTL
	}
	if c.TTL < 100*time.Millisecond {
		return fmt.Errorf("--lease-ttl %s: want at least 100ms", c.TTL)
	}
	if c.Renew == 0 {
		c.Renew = c.TTL / 6
	}
	if c.Renew <= 0 || c.Renew >= c.TTL/2 {
		return fmt.Errorf("lease config: renew interval %s must be below half the TTL %s", c.Renew, c.TTL)
	}
	if c.BucketReplicas == 0 {
		c.BucketReplicas = 1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// LeaseHooks are what a Leaser drives. Gain runs on the Leaser's main
// goroutine, Drop on it or on the renewals' (a lease lost at renewal); a
// partition's Gain and Drop never overlap: a Gain of a partition whose
// Drop is still stopping the old holder waits for it.
type LeaseHooks struct {
	// Gain starts holding partition p (owner: slot 0) with writes fenced at
	// fence. An error gives the lease back.
	Gain func(ctx context.Context, p int, owner bool, fence time.Time) error
	// Drop stops holding partition p; when it returns, p is not written
	// any more. handover is true for a graceful release, false for a lease
	// lost.
	Drop func(ctx context.Context, p int, handover bool)
	// Fence moves partition p's write fence after a renewal.
	Fence func(p int, until time.Time)
}

// leaseValue is the JSON value of a lease or member key.
type leaseValue struct {
	Worker string    `json:"worker"`
	Slot   int       `json:"slot,omitempty"`
	Held   []int     `json:"held,omitempty"`
	At     time.Time `json:"at"`
}

// heldLease is one lease this worker holds.
//
// Renewals run in their own goroutine (renewLoop), beside the balancing
// loop that claims, promotes and releases. op serializes the KV writes of
// one lease between the two: slot, key, rev and valid are written only
// with both op and Leaser.mu held, so reading them under either is safe.
type heldLease struct {
	op      sync.Mutex
	p, slot int
	key     string
	rev     uint64
	valid   time.Time // by this worker's clock: start of the last write + TTL/2
	gone    bool      // dropped: no more writes of this lease
}

// Leaser claims, renews, balances and releases the partition leases of one
// worker in a dynamic group.
type Leaser struct {
	cfg   LeaseConfig
	kv    jetstream.KeyValue
	keys  *bucketKeys
	hooks LeaseHooks
	log   *slog.Logger
	self  string // the worker name as a key token

	mu   sync.Mutex // guards held and members
	held map[int]*heldLease
	// moving[p] is held by a Gain or Drop of partition p. A lease lost at
	// renewal is dropped on the renewals' goroutine while the main loop,
	// seeing the partition free, may claim it again at once; the new
	// holder's shard and consumer must not start until the old ones are
	// stopped and closed, or the Drop would close what the Gain opened.
	moving []sync.Mutex
	// members is the group's size at the last rebalance.
	members int
	ticks   int
}

// NewLeaser creates or updates the group's bucket and returns a Leaser
// holding nothing; Run starts it.
func NewLeaser(ctx context.Context, js jetstream.JetStream, cfg LeaseConfig, hooks LeaseHooks) (*Leaser, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if hooks.Gain == nil || hooks.Drop == nil || hooks.Fence == nil {
		return nil, errors.New("new leaser: Gain, Drop and Fence hooks are required")
	}
	kv, err := retryAttempts(ctx, func(actx context.Context) (jetstream.KeyValue, error) {
		return js.CreateOrUpdateKeyValue(actx, jetstream.KeyValueConfig{
			Bucket:      LeaseBucket(cfg.Group),
			Description: "memindex partition leases of group " + cfg.Group,
			History:     1,
			TTL:         cfg.TTL,
			Replicas:    cfg.BucketReplicas,
			Storage:     jetstream.FileStorage,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("lease bucket %s: %w", LeaseBucket(cfg.Group), err)
	}
	keys, err := openBucketKeys(ctx, js, kv)
	if err != nil {
		return nil, err
	}
	return &Leaser{cfg: cfg, kv: kv, keys: keys, hooks: hooks, log: cfg.Logger.With("group", cfg.Group),
		self: keyToken(cfg.Worker), held: map[int]*heldLease{}, moving: make([]sync.Mutex, cfg.Partitions)}, nil
}

// keyToken makes s a KV key token: characters outside [A-Za-z0-9_-] become _.
func keyToken(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

func leaseKey(p, slot int) string {
	return leaseKeyPrefix + strconv.Itoa(p) + "." + strconv.Itoa(slot)
}

// parseLeaseKey returns the partition and slot of a lease key.
func parseLeaseKey(key string) (p, slot int, ok bool) {
	rest, found := strings.CutPrefix(key, leaseKeyPrefix)
	if !found {
		return 0, 0, false
	}
	ps, ss, found := strings.Cut(rest, ".")
	if !found {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(ps)
	slot, err2 := strconv.Atoi(ss)
	return p, slot, err1 == nil && err2 == nil
}

// Run renews, balances and claims every Renew interval until ctx ends,
// then hands every held partition over (Drop, then the lease is deleted)
// and leaves the group. The first claims wait one interval after the first
// heartbeat, so that workers starting together see each other.
//
// Renewals and the membership heartbeat run in a goroutine of their own:
// gaining a partition (Gain: opening its shard, restoring a snapshot of
// hundreds of MiB, creating consumers while a cluster elects leaders) can
// take longer than TTL/2, and the leases already held must not lapse, and
// their partitions stop writing, meanwhile.
func (l *Leaser) Run(ctx context.Context) {
	rctx, stopRenewing := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() { // stopped and waited for below
		defer close(renewed)
		l.renewLoop(rctx)
	}()
	t := time.NewTicker(l.cfg.Renew)
	defer t.Stop()
	for {
		l.tick(ctx)
		select {
		case <-ctx.Done():
			stopRenewing()
			<-renewed
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.TTL)
			l.releaseAll(rctx)
			cancel()
			return
		case <-t.C:
		}
	}
}

// renewLoop renews every held lease and heartbeats membership every Renew
// interval until ctx ends.
func (l *Leaser) renewLoop(ctx context.Context) {
	t := time.NewTicker(l.cfg.Renew)
	defer t.Stop()
	for {
		l.renewAll(ctx)
		l.heartbeat(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick releases the surplus over the fair share, promotes replicas and
// claims free partitions up to the share (renewLoop renews).
func (l *Leaser) tick(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	l.ticks++
	if l.ticks < 2 {
		return
	}
	keys, err := l.keys.list(ctx)
	if err != nil {
		l.log.Warn("read the lease table", "err", err)
		return
	}
	var members []string
	taken := map[string]bool{}
	for _, k := range keys {
		if strings.HasPrefix(k, memberKeyPrefix) {
			members = append(members, k)
		} else {
			taken[k] = true
		}
	}
	size := max(len(members), 1)
	fair := (l.cfg.Partitions*l.cfg.Replicas + size - 1) / size
	l.mu.Lock()
	l.members = size
	l.mu.Unlock()
	l.releaseSurplus(ctx, fair)
	l.promote(ctx, taken)
	l.claim(ctx, fair, taken)
	if l.cfg.Replicas > 1 {
		l.unstarve(ctx, fair, taken, members)
	}
}

func (l *Leaser) heartbeat(ctx context.Context) {
	v, _ := json.Marshal(leaseValue{Worker: l.cfg.Worker, Held: l.Held(), At: time.Now().UTC()})
	if _, err := l.kv.Put(ctx, memberKeyPrefix+l.self, v); err != nil && ctx.Err() == nil {
		l.log.Warn("group membership heartbeat", "err", err)
	}
}

// renewAll renews every held lease; a lease found lost, or not renewed
// before it is no longer valid by this worker's clock, is dropped.
func (l *Leaser) renewAll(ctx context.Context) {
	for _, h := range l.heldLeases() {
		if ctx.Err() != nil {
			return
		}
		l.renew(ctx, h)
	}
}

// renew renews one lease (see renewAll).
func (l *Leaser) renew(ctx context.Context, h *heldLease) {
	h.op.Lock()
	defer h.op.Unlock()
	if h.gone {
		return
	}
	start := time.Now()
	v, _ := json.Marshal(leaseValue{Worker: l.cfg.Worker, Slot: h.slot, At: start.UTC()})
	rev, err := l.kv.Update(ctx, h.key, v, h.rev)
	switch {
	case err == nil:
		l.mu.Lock() // Leases and Owns read them from other goroutines
		h.rev, h.valid = rev, start.Add(l.cfg.TTL/2)
		l.mu.Unlock()
		l.hooks.Fence(h.p, h.valid)
	case ctx.Err() != nil:
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyExists), isWrongRevision(err):
		l.log.Warn("partition lease lost; stopped writing it", attrPartition, h.p, "slot", h.slot, attrErr, err)
		l.drop(ctx, h, false)
	case !time.Now().Before(h.valid):
		l.log.Warn("partition lease not renewed in time; stopped writing it", attrPartition, h.p, "slot", h.slot, attrErr, err)
		l.drop(ctx, h, false)
	default:
		l.log.Warn("renew partition lease; retrying", attrPartition, h.p, attrErr, err)
	}
}

// isWrongRevision reports a KV update refused because the key's revision
// is not the one given.
func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// releaseSurplus hands over leases above the fair share: replica slots
// first, then the highest partitions.
func (l *Leaser) releaseSurplus(ctx context.Context, fair int) {
	held := l.heldLeases()
	if len(held) <= fair {
		return
	}
	slices.SortFunc(held, func(a, b *heldLease) int {
		if c := cmp.Compare(b.slot, a.slot); c != 0 {
			return c
		}
		return cmp.Compare(b.p, a.p)
	})
	for _, h := range held[:len(held)-fair] {
		l.log.Info("handing a partition over to rebalance the group", attrPartition, h.p, "slot", h.slot, "fair_share", fair)
		l.release(ctx, h)
	}
}

// release drops h and deletes its lease, so another worker may claim it at
// once.
func (l *Leaser) release(ctx context.Context, h *heldLease) {
	h.op.Lock()
	defer h.op.Unlock()
	if h.gone {
		return
	}
	l.drop(ctx, h, true)
	if err := l.kv.Delete(ctx, h.key, jetstream.LastRevision(h.rev)); err != nil {
		l.log.Warn("release partition lease; it expires after the TTL", attrPartition, h.p, attrErr, err)
	}
}

// drop stops holding h: Drop stops the partition's writes and searches.
// The caller holds h.op.
func (l *Leaser) drop(ctx context.Context, h *heldLease, handover bool) {
	l.mu.Lock()
	h.gone = true
	if l.held[h.p] == h {
		delete(l.held, h.p)
	}
	l.mu.Unlock()
	l.moving[h.p].Lock()
	defer l.moving[h.p].Unlock()
	l.hooks.Drop(ctx, h.p, handover)
}

// gain runs the Gain hook for hl once no Drop of its partition runs.
func (l *Leaser) gain(ctx context.Context, hl *heldLease) error {
	l.moving[hl.p].Lock()
	defer l.moving[hl.p].Unlock()
	return l.hooks.Gain(ctx, hl.p, hl.slot == 0, hl.valid)
}

// claim creates free lease keys until this worker holds fair partitions,
// starting at a partition derived from its name so that workers starting
// together do not all race for the same keys. A free owner slot whose
// partition has a replica is left to that replica (promote).
func (l *Leaser) claim(ctx context.Context, fair int, taken map[string]bool) {
	h := fnv.New32a()
	h.Write([]byte(l.self))
	start := int(h.Sum32() % uint32(l.cfg.Partitions))
	for slot := range l.cfg.Replicas {
		for i := range l.cfg.Partitions {
			if l.count() >= fair || ctx.Err() != nil {
				return
			}
			p := (start + i) % l.cfg.Partitions
			if l.claimable(p, slot, taken) {
				l.take(ctx, p, slot, taken)
			}
		}
	}
}

// claimable reports whether this worker may claim slot of partition p.
func (l *Leaser) claimable(p, slot int, taken map[string]bool) bool {
	return !taken[leaseKey(p, slot)] && !l.holds(p) && (slot > 0 || !l.replicaTaken(p, taken))
}

// take claims slot of partition p and gains p; false when the key exists
// or Gain fails (the lease is given back).
func (l *Leaser) take(ctx context.Context, p, slot int, taken map[string]bool) bool {
	key := leaseKey(p, slot)
	begin := time.Now()
	v, _ := json.Marshal(leaseValue{Worker: l.cfg.Worker, Slot: slot, At: begin.UTC()})
	rev, err := l.kv.Create(ctx, key, v)
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) && ctx.Err() == nil {
			l.log.Warn("claim partition lease", attrPartition, p, attrErr, err)
		}
		return false
	}
	hl := &heldLease{p: p, slot: slot, key: key, rev: rev, valid: begin.Add(l.cfg.TTL / 2)}
	if err := l.gain(ctx, hl); err != nil {
		l.log.Error("take a claimed partition; giving the lease back", attrPartition, p, attrErr, err)
		_ = l.kv.Delete(ctx, key, jetstream.LastRevision(rev))
		return false
	}
	taken[key] = true
	l.mu.Lock()
	l.held[p] = hl
	l.mu.Unlock()
	l.log.Info("partition lease claimed", attrPartition, p, "slot", slot, "owner", slot == 0)
	return true
}

// releaseAll hands every held partition over and leaves the group.
func (l *Leaser) releaseAll(ctx context.Context) {
	for _, h := range l.heldLeases() {
		l.release(ctx, h)
	}
	if err := l.kv.Delete(ctx, memberKeyPrefix+l.self); err != nil {
		l.log.Warn("leave the group; membership expires after the TTL", attrErr, err)
	}
}

func (l *Leaser) heldLeases() []*heldLease {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*heldLease, 0, len(l.held))
	for _, h := range l.held {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b *heldLease) int { return cmp.Compare(a.p, b.p) })
	return out
}

func (l *Leaser) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}

func (l *Leaser) holds(p int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.held[p]
	return ok
}

// Held returns the partitions this worker holds a lease of, ascending.
func (l *Leaser) Held() []int {
	hs := l.heldLeases()
	out := make([]int, len(hs))
	for i, h := range hs {
		out[i] = h.p
	}
	return out
}

// Owns reports whether this worker holds partition p's owner lease (slot
// 0) and it is still valid by its clock: the one holder that may write
// shared artefacts of p, such as snapshots.
func (l *Leaser) Owns(p int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.held[p]
	return ok && h.slot == 0 && time.Now().Before(h.valid)
}

// LeaseState is this worker's view of one held lease, for status.
type LeaseState struct {
	Partition int
	Owner     bool      // slot 0
	Valid     time.Time // writes stop at Valid unless renewed
	Revision  uint64
}

// Leases returns the leases this worker holds, by partition, and the
// group's size at the last rebalance.
func (l *Leaser) Leases() (map[int]LeaseState, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int]LeaseState, len(l.held))
	for p, h := range l.held {
		out[p] = LeaseState{Partition: p, Owner: h.slot == 0, Valid: h.valid, Revision: h.rev}
	}
	return out, l.members
}

// LeaseHolder is one live lease of the group's table.
type LeaseHolder struct {
	Partition int    `json:"partition"`
	Slot      int    `json:"slot"`
	Worker    string `json:"worker"`
	Revision  uint64 `json:"revision"`
}

// LeaseTable reads every live lease of group, by partition then slot.
func LeaseTable(ctx context.Context, js jetstream.JetStream, group string) ([]LeaseHolder, error) {
	kv, err := js.KeyValue(ctx, LeaseBucket(group))
	if err != nil {
		return nil, fmt.Errorf("lease bucket %s: %w", LeaseBucket(group), err)
	}
	bk, err := openBucketKeys(ctx, js, kv)
	if err != nil {
		return nil, err
	}
	keys, err := bk.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	var out []LeaseHolder
	for _, k := range keys {
		p, slot, ok := parseLeaseKey(k)
		if !ok {
			continue
		}
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // released meanwhile
		}
		var v leaseValue
		_ = json.Unmarshal(e.Value(), &v)
		out = append(out, LeaseHolder{Partition: p, Slot: slot, Worker: v.Worker, Revision: e.Revision()})
	}
	slices.SortFunc(out, func(a, b LeaseHolder) int {
		if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
			return c
		}
		return cmp.Compare(a.Slot, b.Slot)
	})
	return out, nil
}
