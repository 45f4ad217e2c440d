package node

import (
	"context"
	"errors"
	"math"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"memindex"
	"memindex/client"
	"memindex/consumer"
	"memindex/store"
)

// TestMemoryLimitIsAppliedAndReported: a worker started with
// --memory-limit gives its shards the page caches store.MemoryBudget
// derives, sets the Go heap's soft limit, leaves the collector's GOGC as
// it is, and reports them, with its indexes' sizes, in status and metrics;
// a limit too small for its partitions is refused with the reason.
func TestMemoryLimitIsAppliedAndReported(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	prevGC := debug.SetGCPercent(150) // the limit leaves it so
	t.Cleanup(func() { debug.SetGCPercent(prevGC) })
	const partitions = 2
	cfg := obsConfig(t.TempDir(), "", partitions)
	const limit = 160 << 20
	cfg.MemoryLimit = limit
	n := startObsNode(t, cfg)
	kib, sqlite, goLimit, err := store.MemoryBudget(limit, partitions, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != goLimit {
		t.Fatalf("Go memory limit %d, want %d", got, goLimit)
	}
	if got := gcPercent(); got != 150 {
		t.Fatalf("GOGC beneath the limit %d, want 150 left as it was", got)
	}
	if sc := n.shardConfig(64, "s"); sc.CacheKiB != kib || sc.MmapBytes != -1 {
		t.Fatalf("shard config %+v, want %d KiB and no mapping", sc, kib)
	}
	const ns = "memory-tenant"
	publishLines(t, n.js, ns, 1, 20, false)
	cl := client.NewClient(n.nc)
	ctx := context.Background()
	var st memindex.StatusResponse
	waitUntil(t, 30*time.Second, "20 messages applied with their indexes reported", func() bool {
		sts, err := cl.Status(ctx, 200*time.Millisecond)
		if err != nil || len(sts) != 1 {
			return false
		}
		st = sts[0]
		return st.Total().Messages == 20 && st.Total().VectorsWaiting == 0
	})
	m := st.Memory
	if m == nil || m.LimitBytes != limit || m.GoLimitBytes != goLimit || m.SQLiteCacheBytes != sqlite || m.HeapBytes <= 0 || m.RSSBytes <= 0 || m.GCPercent != 150 {
		t.Fatalf("status memory %+v; want limit 160 MiB, Go limit %d, SQLite %d, heap and RSS read, GOGC 150", m, goLimit, sqlite)
	}
	// Each partition's pull buffer is its share of a sixteenth of the Go
	// heap (3.75 MiB here, under the default 8), as its worker has it.
	if pull := int64(partitions) * (goLimit / 16 / partitions); m.PullBufferBytes != pull || pull >= partitions*consumer.DefaultPullBufferBytes {
		t.Fatalf("status memory: pull buffers %d, want %d", m.PullBufferBytes, pull)
	}
	if m.InflightBytes != goLimit/16 {
		t.Fatalf("status memory: in-flight bound %d, want a sixteenth of the Go limit, %d", m.InflightBytes, goLimit/16)
	}
	p := memindex.Partition(ns, partitions)
	var ps memindex.PartitionStatus
	for _, x := range st.Partitions {
		if x.Partition == p {
			ps = x
		}
	}
	if ps.KeywordIndex != "memory" || ps.KeywordIndexBytes <= 0 || ps.VectorIndexBytes <= 0 || m.IndexBytes < ps.KeywordIndexBytes+ps.VectorIndexBytes {
		t.Fatalf("partition %d status %+v, memory %+v; want both indexes sized and counted", p, ps, m)
	}
	if ps.PageBytes != 16384 {
		t.Fatalf("partition %d status: page size %d, want 16384 (a shard file this version created)", p, ps.PageBytes)
	}
	series, _ := scrape(t, n)
	l := strconv.Itoa(p)
	for name, want := range map[string]float64{
		`memindex_memory_limit_bytes`:                                 limit,
		`memindex_sqlite_cache_bound_bytes`:                           float64(sqlite),
		`memindex_pull_buffer_bound_bytes`:                            float64(m.PullBufferBytes),
		`memindex_ingest_inflight_bound_bytes`:                        float64(m.InflightBytes),
		`memindex_memory_gc_percent`:                                  150,
		`memindex_index_bytes{index="keyword",partition="` + l + `"}`: float64(ps.KeywordIndexBytes),
	} {
		got, ok := series[name]
		if !ok || (name != `memindex_index_bytes{index="keyword",partition="`+l+`"}` && got != want) || got <= 0 {
			t.Errorf("metric %s = %v (%v), want %v", name, got, ok, want)
		}
	}
	if v := series["memindex_memory_rss_bytes"]; v <= 0 || math.IsNaN(v) {
		t.Errorf("memindex_memory_rss_bytes = %v", v)
	}

	// 16 partitions under 256 MiB: a sixteenth of the Go heap is 768 KiB a
	// partition, below the largest event, so each gets what that needs.
	tight := obsConfig(t.TempDir(), "", 16)
	tight.MemoryLimit = 256 << 20
	tn := &Node{cfg: tight, partitions: 16}
	if err := tn.applyMemoryLimit(); err != nil {
		t.Fatal(err)
	}
	if want := memindex.MaxEventBytes + consumer.PullMargin; tn.pullBufferBytes != want {
		t.Fatalf("pull buffer under 256 MiB for 16 partitions: %d, want %d", tn.pullBufferBytes, want)
	}

	small := obsConfig(t.TempDir(), "", 64)
	small.MemoryLimit = 100 << 20
	if err := (&Node{cfg: small, partitions: 64}).applyMemoryLimit(); err == nil {
		t.Fatal("a 100 MiB limit for 64 partitions was accepted")
	}
}

// TestAutoMemoryLimit: auto is half of the lower of the machine's memory
// and its cgroup's limit, whichever of them can be read; neither is no
// bound.
func TestAutoMemoryLimit(t *testing.T) {
	fixed := func(v uint64) memlimit.Provider { return memlimit.Limit(v) }
	none := func() (uint64, error) { return 0, memlimit.ErrNoLimit }
	broken := func() (uint64, error) { return 0, errors.New("unreadable") }
	for _, c := range []struct {
		name           string
		system, cgroup memlimit.Provider
		want           int64
	}{
		{"a cgroup limit below the machine's memory", fixed(16 << 30), fixed(2 << 30), 1 << 30},
		{"a cgroup limit above it", fixed(4 << 30), fixed(64 << 30), 2 << 30},
		{"no cgroup limit", fixed(8 << 30), none, 4 << 30},
		{"the machine's memory unreadable", broken, fixed(6 << 30), 3 << 30},
		{"neither", broken, none, 0},
	} {
		if got := autoMemoryLimit(c.system, c.cgroup); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if got := AutoMemoryLimit(); got < 0 || (runtime.GOOS == "linux" && got == 0) {
		t.Errorf("AutoMemoryLimit() = %d on %s, want half of the memory this machine has", got, runtime.GOOS)
	}
}
