package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/consumer"
	"memindex/internal/natstest"
	"memindex/store"
)

// Read replicas (`memindex serve --group g --replicas 2`): every partition
// has two holders, each consuming the stream into its own shard file, and
// the partition's searches are spread over both.

const (
	replicaPartitions = 4
	// replicaLeaseTTL is 3 s, not 1.2: a holder drops a lease it has not
	// renewed within TTL/2, renewing every TTL/6, so 1.2 s left a renewal
	// 400 ms of slack. Under the whole suite's race-detector load that is
	// the likely cause (not reproduced alone, nor beside two packages'
	// tests) of TestReplicaGroupReplacesADeadHolder seeing the third worker
	// take the owner slot the replica was due: the replica's lease lapsed.
	replicaLeaseTTL = 3 * time.Second
	// replicaSearches is how many searches of one partition the balance
	// checks send: with two holders in a queue group, one of them answering
	// none is a 2^-39 chance.
	replicaSearches = 40
)

// replicaGroup starts one worker of group g per name on s: 4 partitions, 2
// holders each, lease TTL replicaLeaseTTL.
func replicaGroup(t *testing.T, s *server.Server, names ...string) []*Node {
	t.Helper()
	var out []*Node
	for _, name := range names {
		n, _ := clusterNode(t, s, name, func(c *Config) {
			c.Group, c.PartitionCount, c.LeaseTTL, c.Replicas = "g", replicaPartitions, replicaLeaseTTL, 2
		})
		out = append(out, n)
	}
	return out
}

// leaseSlots reads the group's lease table: each partition's holders,
// indexed by slot ("" for a free slot).
func leaseSlots(t *testing.T, js jetstream.JetStream) map[int][]string {
	t.Helper()
	table, err := consumer.LeaseTable(context.Background(), js, "g")
	if err != nil {
		t.Fatalf("LeaseTable: %v", err)
	}
	out := map[int][]string{}
	for p := range replicaPartitions {
		out[p] = make([]string, 2)
	}
	for _, l := range table {
		if l.Slot < 2 {
			out[l.Partition][l.Slot] = l.Worker
		}
	}
	return out
}

// replicated reports whether every partition has two distinct holders in
// the lease table, both among nodes, leasing it and serving it ready; why
// says what is missing.
func replicated(t *testing.T, js jetstream.JetStream, nodes []*Node) (ok bool, why string) {
	t.Helper()
	byName := map[string]*Node{}
	for _, n := range nodes {
		byName[n.cfg.Worker] = n
	}
	slots := leaseSlots(t, js)
	for p := range replicaPartitions {
		hs := slots[p]
		if hs[0] == "" || hs[1] == "" || hs[0] == hs[1] {
			return false, fmt.Sprintf("partition %d has holders %q, want two distinct (table %v)", p, hs, slots)
		}
		for _, h := range hs {
			n := byName[h]
			if n == nil || !slices.Contains(n.own.leaser.Load().Held(), p) || !n.holds(p) {
				return false, fmt.Sprintf("partition %d: holder %q is not a live worker serving it ready (table %v)", p, h, slots)
			}
		}
	}
	return true, ""
}

// waitReplicated waits until every partition has two ready holders among
// nodes, running during each poll, when not nil.
func waitReplicated(t *testing.T, js jetstream.JetStream, nodes []*Node, during func()) map[int][]string {
	t.Helper()
	var why string
	waitUntil(t, 45*time.Second, "two ready holders of every partition", func() bool {
		if during != nil {
			during()
		}
		var ok bool
		ok, why = replicated(t, js, nodes)
		return ok
	})
	if why != "" {
		t.Fatal(why)
	}
	return leaseSlots(t, js)
}

// checkRoles checks that each node's status lists exactly the partitions
// it holds in slots, as owner for slot 0 and replica otherwise, all ready.
func checkRoles(t *testing.T, nodes []*Node, slots map[int][]string) {
	t.Helper()
	for _, n := range nodes {
		st := n.status(context.Background())
		if st.Group != "g" || st.Replicas != 2 || st.PartitionCount != replicaPartitions {
			t.Fatalf("%s status group=%q replicas=%d partitionCount=%d, want g, 2, %d", n.cfg.Worker, st.Group, st.Replicas, st.PartitionCount, replicaPartitions)
		}
		var listed []int
		for _, ps := range st.Partitions {
			listed = append(listed, ps.Partition)
			want := ""
			switch n.cfg.Worker {
			case slots[ps.Partition][0]:
				want = memindex.RoleOwner
			case slots[ps.Partition][1]:
				want = memindex.RoleReplica
			}
			if ps.Role != want || ps.State != memindex.StateReady {
				t.Errorf("%s status partition %d: role %q state %q, want role %q (lease table %v), state ready", n.cfg.Worker, ps.Partition, ps.Role, ps.State, want, slots)
			}
		}
		var leased []int
		for p, hs := range slots {
			if slices.Contains(hs, n.cfg.Worker) {
				leased = append(leased, p)
			}
		}
		slices.Sort(listed)
		slices.Sort(leased)
		if !slices.Equal(listed, leased) {
			t.Errorf("%s status lists partitions %v, want the %v it leases", n.cfg.Worker, listed, leased)
		}
	}
}

// replicaText is the text of round's message of namespace ns.
func replicaText(ns string, round int) string {
	return fmt.Sprintf("the marmalade recipe of %s (round %d)", ns, round)
}

// publishRound publishes one message (session seq round) to each
// namespace and returns the last stream sequence of each partition.
func publishRound(t *testing.T, js jetstream.JetStream, namespaces []string, round int) map[int]uint64 {
	t.Helper()
	last := map[int]uint64{}
	for _, ns := range namespaces {
		b, _ := json.Marshal(memindex.Event{Type: memindex.TypeMessage, Namespace: ns, SessionKey: "chat", SessionID: "s1",
			Seq: int64(round), ID: fmt.Sprintf("%s-%d", ns, round), Speaker: "Ana", Text: replicaText(ns, round), Timestamp: "2026-11-30T09:00:00Z"})
		ack, err := js.Publish(context.Background(), memindex.EventSubject(ns), b)
		if err != nil {
			t.Fatal(err)
		}
		last[memindex.Partition(ns, replicaPartitions)] = ack.Sequence
	}
	return last
}

// shardOf returns node n's serving shard of partition p (nil when none).
func shardOf(n *Node, p int) *store.Shard {
	n.genMu.RLock()
	defer n.genMu.RUnlock()
	return n.serving.shards[p]
}

// holderView is what a holder's shard of a partition holds: its counts and,
// per namespace, the ids of the chunks a keyword search finds.
type holderView struct {
	stats store.Stats
	ids   map[string][]string
}

func viewOf(t *testing.T, sh *store.Shard, namespaces []string) holderView {
	t.Helper()
	ctx := context.Background()
	st, err := sh.Stats(ctx)
	if err != nil {
		t.Fatalf("%s: Stats: %v", sh.Path(), err)
	}
	st.OldestWaiting, st.VectorsWaiting = time.Time{}, 0 // the backfill's progress, not content
	v := holderView{stats: st, ids: map[string][]string{}}
	for _, ns := range namespaces {
		cs, err := sh.KeywordSearch(ctx, ns, "marmalade recipe", store.Filter{}, 50)
		if err != nil {
			t.Fatalf("%s: KeywordSearch(%s): %v", sh.Path(), ns, err)
		}
		for _, c := range cs {
			v.ids[ns] = append(v.ids[ns], c.ID)
		}
		slices.Sort(v.ids[ns])
	}
	return v
}

// checkSameChunks waits until both holders of every partition have applied
// the partition's last sequence, then checks that their shards hold the
// same chunks: the same counts and, for each of the partition's
// namespaces, the same chunk ids, each message of rounds there.
func checkSameChunks(t *testing.T, nodes []*Node, slots map[int][]string, last map[int]uint64, namespaces []string, rounds int) {
	t.Helper()
	byName := map[string]*Node{}
	for _, n := range nodes {
		byName[n.cfg.Worker] = n
	}
	byPart := map[int][]string{}
	for _, ns := range namespaces {
		p := memindex.Partition(ns, replicaPartitions)
		byPart[p] = append(byPart[p], ns)
	}
	for p := range replicaPartitions {
		if len(byPart[p]) == 0 {
			t.Fatalf("no namespace falls in partition %d; publish more", p)
		}
		var views []holderView
		for _, h := range slots[p] {
			n := byName[h]
			waitUntil(t, 30*time.Second, fmt.Sprintf("%s to apply partition %d up to %d", h, p, last[p]), func() bool {
				a, ok := n.serving.worker.Applied(p)
				return ok && a >= last[p]
			})
			views = append(views, viewOf(t, shardOf(n, p), byPart[p]))
		}
		a, b := views[0], views[1]
		if a.stats != b.stats {
			t.Errorf("partition %d: %s's shard %+v, %s's %+v; want the same", p, slots[p][0], a.stats, slots[p][1], b.stats)
		}
		if want := int64(len(byPart[p]) * rounds); a.stats.Messages != want || a.stats.Namespaces != int64(len(byPart[p])) {
			t.Errorf("partition %d: %d messages of %d namespaces, want %d of %d", p, a.stats.Messages, a.stats.Namespaces, want, len(byPart[p]))
		}
		for _, ns := range byPart[p] {
			if len(a.ids[ns]) == 0 || !slices.Equal(a.ids[ns], b.ids[ns]) {
				t.Errorf("partition %d namespace %s: %s holds chunks %v, %s %v; want the same, not none", p, ns, slots[p][0], a.ids[ns], slots[p][1], b.ids[ns])
			}
		}
	}
}

// searchesRun is how many searches n ran itself: the count of its
// memindex_search_duration_seconds{leg="total"} (a forwarded search counts
// where it runs, and it is counted before the reply is sent).
func searchesRun(t *testing.T, n *Node) uint64 {
	t.Helper()
	mfs, err := n.metrics.reg.Gather()
	if err != nil {
		t.Fatalf("gather %s's metrics: %v", n.cfg.Worker, err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "memindex_search_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == labelLeg && l.GetValue() == legTotal {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// checkHits fails unless resp answers ns with hits of ns only.
func checkHits(t *testing.T, ns string, resp memindex.SearchResponse) {
	t.Helper()
	if len(resp.Hits) == 0 {
		t.Fatalf("search %s: no hit, want its messages", ns)
	}
	for _, h := range resp.Hits {
		if !strings.Contains(h.Text, "recipe of "+ns+" (") {
			t.Fatalf("search %s returned %q, of another namespace", ns, h.Text)
		}
	}
}

// checkBalanced sends replicaSearches searches of a namespace of each
// partition straight to the partition's holders (client.Client with
// UsePartitions) and checks that both holders answered some, and nobody
// else any.
func checkBalanced(t *testing.T, c *client.Client, nodes []*Node, slots map[int][]string, namespaces []string) {
	t.Helper()
	for p := range replicaPartitions {
		ns := ""
		for _, cand := range namespaces {
			if memindex.Partition(cand, replicaPartitions) == p {
				ns = cand
				break
			}
		}
		before := map[string]uint64{}
		for _, n := range nodes {
			before[n.cfg.Worker] = searchesRun(t, n)
		}
		for range replicaSearches {
			resp, err := c.Search(context.Background(), memindex.SearchRequest{Namespace: ns, Query: "marmalade recipe"})
			if err != nil {
				t.Fatalf("search %s (partition %d): %v", ns, p, err)
			}
			checkHits(t, ns, resp)
		}
		ran := map[string]uint64{}
		for _, n := range nodes {
			ran[n.cfg.Worker] = searchesRun(t, n) - before[n.cfg.Worker]
		}
		for _, n := range nodes {
			w := n.cfg.Worker
			switch holder := slices.Contains(slots[p], w); {
			case holder && ran[w] == 0:
				t.Errorf("partition %d: holder %s answered none of %d searches (ran %v); want both holders to share them", p, w, replicaSearches, ran)
			case !holder && ran[w] != 0:
				t.Errorf("partition %d: %s, not a holder, ran %d of its searches (ran %v)", p, w, ran[w], ran)
			}
		}
		if got := ran[slots[p][0]] + ran[slots[p][1]]; got != replicaSearches {
			t.Errorf("partition %d: holders ran %d searches, want %d (ran %v)", p, got, replicaSearches, ran)
		}
	}
}

// TestReplicasHoldEveryPartitionTwiceAndShareItsSearches: three workers,
// four partitions, two holders each: every partition has an owner and a
// replica on two workers, spread 3/3/2; status says so; each holder
// consumes the stream into its own shard, and both end with the same
// chunks; a partition's direct searches are answered by both holders.
func TestReplicasHoldEveryPartitionTwiceAndShareItsSearches(t *testing.T) {
	s := natstest.Server(t)
	nodes := replicaGroup(t, s, "w1", "w2", "w3")
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	slots := waitReplicated(t, js, nodes, nil)
	for _, n := range nodes {
		// ceil(4*2/3) = 3 each at most, and 8 slots over 3 workers.
		if got := len(n.own.leaser.Load().Held()); got < 2 || got > 3 {
			t.Errorf("%s holds %v, want 2 or 3 of the 8 slots (table %v)", n.cfg.Worker, n.own.leaser.Load().Held(), slots)
		}
	}
	checkRoles(t, nodes, slots)

	namespaces := testNamespaces(48)
	last := publishRound(t, js, namespaces, 1)
	checkSameChunks(t, nodes, slots, last, namespaces, 1)

	c := client.NewClient(natstest.Connect(t, s))
	c.UsePartitions(replicaPartitions)
	checkBalanced(t, c, nodes, slots, namespaces)
}

// TestReplicaGroupReplacesADeadHolder: a worker that is the owner of some
// partitions and a replica of others dies. Its partitions keep answering
// from their other holder meanwhile (a 503 "retry" at worst, never a wrong
// or empty answer). After the TTL, where it was the owner the replica is
// promoted to owner (it is caught up: no rebuild) and the third worker
// takes the replica slot; where it was a replica the third worker takes
// its slot. The new holders rebuild from the stream, including what was
// published after the death, to the same chunks as the other holder, and
// share the searches.
func TestReplicaGroupReplacesADeadHolder(t *testing.T) {
	s := natstest.Server(t)
	nodes := replicaGroup(t, s, "w1", "w2", "w3")
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	slots := waitReplicated(t, js, nodes, nil)
	namespaces := testNamespaces(48)
	last := publishRound(t, js, namespaces, 1)
	checkSameChunks(t, nodes, slots, last, namespaces, 1)

	// The victim: owner of some partitions and, when there is one, a
	// replica of others.
	var victim *Node
	for _, n := range nodes {
		owner, replica := 0, 0
		for p := range replicaPartitions {
			switch n.cfg.Worker {
			case slots[p][0]:
				owner++
			case slots[p][1]:
				replica++
			}
		}
		if owner > 0 && (victim == nil || replica > 0) {
			victim = n
		}
	}
	var survivors []*Node
	for _, n := range nodes {
		if n != victim {
			survivors = append(survivors, n)
		}
	}
	// What the lease table must say afterwards: each survivor moves up to
	// the victim's slot or keeps its own; the survivor that did not hold
	// the partition takes the slot left free.
	want := map[int][]string{}
	for p := range replicaPartitions {
		hs := slices.Clone(slots[p])
		switch vs := slices.Index(hs, victim.cfg.Worker); vs {
		case 0:
			hs[0] = hs[1]
			fallthrough
		case 1:
			hs[1] = otherWorker(survivors, hs[0])
		}
		want[p] = hs
	}

	before := slots
	victim.nc.Close() // it dies: nothing is handed over
	last = publishRound(t, js, namespaces, 2)
	c := client.NewClient(natstest.Connect(t, s))
	c.UsePartitions(replicaPartitions)
	var answered, retry int
	i := 0
	search := func() {
		ns := namespaces[i%len(namespaces)]
		i++
		resp, err := c.Search(context.Background(), memindex.SearchRequest{Namespace: ns, Query: "marmalade recipe"})
		var rerr *client.RemoteError
		switch {
		case err == nil:
			checkHits(t, ns, resp)
			answered++
		case errors.As(err, &rerr) && rerr.Code == memindex.CodeUnavailable && strings.Contains(rerr.Message, "retry"):
			retry++
		default:
			t.Fatalf("search %s while %s's partitions move: %v; want its hits or a 503 retry", ns, victim.cfg.Worker, err)
		}
	}
	slots = waitReplicated(t, js, survivors, search)
	t.Logf("while the dead worker's partitions moved: %d searches answered, %d 503 retry", answered, retry)
	for p := range replicaPartitions {
		if !slices.Equal(slots[p], want[p]) {
			t.Errorf("partition %d held by %q after %s died (before: %q), want %q: the replica promoted to owner, the free slot to the third worker",
				p, slots[p], victim.cfg.Worker, before[p], want[p])
		}
	}
	checkRoles(t, survivors, slots)
	checkSameChunks(t, survivors, slots, last, namespaces, 2)
	checkBalanced(t, c, survivors, slots, namespaces)
}

// TestReplicaGroupOfTwoKeepsAnOwnerWhenOneDies: two workers hold every
// partition, each the owner of some. One dies: the other, a replica of
// those, is promoted, so every partition still has an owner (which writes
// its snapshots), although no worker is left to claim a free slot.
func TestReplicaGroupOfTwoKeepsAnOwnerWhenOneDies(t *testing.T) {
	s := natstest.Server(t)
	nodes := replicaGroup(t, s, "w1", "w2")
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	slots := waitReplicated(t, js, nodes, nil)
	checkRoles(t, nodes, slots)
	victim, survivor := nodes[0], nodes[1]
	if slots[0][0] != victim.cfg.Worker {
		victim, survivor = survivor, victim // the owner of partition 0 dies
	}
	victim.nc.Close()
	waitUntil(t, 30*time.Second, survivor.cfg.Worker+" to own every partition", func() bool {
		st := survivor.status(context.Background())
		if len(st.Partitions) != replicaPartitions {
			return false
		}
		for _, ps := range st.Partitions {
			if ps.Role != memindex.RoleOwner || ps.State != memindex.StateReady || !survivor.own.leaser.Load().Owns(ps.Partition) {
				return false
			}
		}
		return true
	})
	// The dead worker's replica leases lapse after their TTL, not when the
	// survivor takes the owner slots: poll for them to go.
	waitUntil(t, 30*time.Second, "the dead worker's replica leases to lapse", func() bool {
		slots = leaseSlots(t, js)
		for p := range replicaPartitions {
			if slots[p][0] != survivor.cfg.Worker || slots[p][1] != "" {
				return false
			}
		}
		return true
	})
	for p := range replicaPartitions {
		if slots[p][0] != survivor.cfg.Worker || slots[p][1] != "" {
			t.Errorf("partition %d held by %q, want %s as its owner and no replica left", p, slots[p], survivor.cfg.Worker)
		}
	}
	namespaces := testNamespaces(16)
	last := publishRound(t, js, namespaces, 1)
	c := client.NewClient(natstest.Connect(t, s))
	c.UsePartitions(replicaPartitions)
	for _, ns := range namespaces {
		p := memindex.Partition(ns, replicaPartitions)
		waitUntil(t, 30*time.Second, fmt.Sprintf("partition %d applied", p), func() bool {
			a, _ := survivor.serving.worker.Applied(p)
			return a >= last[p]
		})
		resp, err := c.Search(context.Background(), memindex.SearchRequest{Namespace: ns, Query: "marmalade recipe"})
		if err != nil {
			t.Fatalf("search %s after the promotion: %v", ns, err)
		}
		checkHits(t, ns, resp)
	}
}

// otherWorker returns the name of the node of nodes that is not named name.
func otherWorker(nodes []*Node, name string) string {
	for _, n := range nodes {
		if n.cfg.Worker != name {
			return n.cfg.Worker
		}
	}
	return ""
}
