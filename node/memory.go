package node

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"memindex"
	"memindex/consumer"
	"memindex/store"
)

// applyMemoryLimit derives the shards' SQLite page caches and the Go
// heap's soft limit from --memory-limit for a worker that may hold all P
// partitions (store.MemoryBudget), and each partition's pull buffer: its
// share of a sixteenth of the Go heap, at most the consumer's default and
// at least what the largest event needs (consumer.PullBufferBound); and
// the payload all partitions' batches may hold together, a sixteenth of
// the Go heap (a batch's heap is several times its payload once chunked
// and embedded). The collector's GOGC stays the runtime's (Go's 100, or
// the environment's GOGC): 200 and 400 beneath the limit made a fresh
// worker ingest faster but one already holding a large heap slower, each
// larger heap goal being fresh memory to fault in (BENCHMARKS.md,
// twenty-fourth session). No limit keeps the store's and the consumer's
// defaults.
func (n *Node) applyMemoryLimit() error {
	if n.cfg.MemoryLimit <= 0 {
		return nil
	}
	kib, sqlite, goLimit, err := store.MemoryBudget(n.cfg.MemoryLimit, n.partitions, 0)
	if err != nil {
		return fmt.Errorf("--memory-limit (MEMINDEX_MEMORY_LIMIT): %w", err)
	}
	n.shardCacheKiB, n.sqliteCacheBytes, n.goMemLimit = kib, sqlite, goLimit
	n.inflightBytes = goLimit / 16
	n.pullBufferBytes = consumer.PullBufferBound(int(min(consumer.DefaultPullBufferBytes, goLimit/16/int64(max(n.partitions, 1)))), n.cfg.Limits)
	debug.SetMemoryLimit(goLimit)
	return nil
}

// AutoMemoryLimit is --memory-limit's default, auto: half of the memory the
// process may use, the machine's or its cgroup's limit when that is lower
// (cgroup v1 and v2, read by automemlimit); 0, no bound, when neither can
// be read.
// It reads the machine once a process: node.DefaultConfig asks for it at
// every call.
var AutoMemoryLimit = sync.OnceValue(func() int64 {
	return autoMemoryLimit(memlimit.FromSystem, memlimit.FromCgroup)
})

// autoMemoryLimit is half of the lower of what system and cgroup report;
// a provider's error (memlimit.ErrNoLimit among them) leaves it out.
func autoMemoryLimit(system, cgroup memlimit.Provider) int64 {
	var total uint64
	for _, p := range []memlimit.Provider{system, cgroup} {
		if v, err := p(); err == nil && v > 0 && (total == 0 || v < total) {
			total = v
		}
	}
	return int64(min(total/2, math.MaxInt64))
}

// shardConfig is the store configuration of the worker's shards.
func (n *Node) shardConfig(dims int, space string) store.Config {
	sc := store.Config{Dims: dims, Space: space, NoSqliteVec: !n.cfg.SQLiteVec}
	if n.cfg.MemoryLimit > 0 {
		sc.CacheKiB, sc.MmapBytes = n.shardCacheKiB, -1
		// An eighth of the Go heap's limit for the float32 copies small
		// shards keep for rescoring, spread over the partitions.
		sc.VectorCopyBytes = -1
		if c := n.goMemLimit / 8 / int64(max(n.partitions, 1)); c > 0 {
			sc.VectorCopyBytes = min(store.DefaultVectorCopyBytes, c)
		}
	}
	return sc
}

// memoryStatus reads the worker's memory for status; pullBuffer is each
// partition's pull buffer bound and inflight the bound of all its batches'
// payload, as its worker has them.
func (n *Node) memoryStatus(parts []memindex.PartitionStatus, pullBuffer int, inflight int64) *memindex.MemoryStatus {
	ms := &memindex.MemoryStatus{LimitBytes: n.cfg.MemoryLimit, GoLimitBytes: n.goMemLimit, SQLiteCacheBytes: n.sqliteCacheBytes,
		PullBufferBytes: int64(len(parts)) * int64(pullBuffer), InflightBytes: inflight}
	if n.cfg.MemoryLimit <= 0 {
		ms.GoLimitBytes = 0
		ms.SQLiteCacheBytes = int64(len(parts)) * (store.Config{Dims: 1}).CacheBytes()
	}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: gogcMetric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		ms.HeapBytes = int64(sample[0].Value.Uint64())
	}
	ms.GCPercent = gcPercentOf(sample[1].Value)
	for _, p := range parts {
		ms.IndexBytes += p.KeywordIndexBytes + p.VectorIndexBytes
	}
	ms.RSSBytes = rssBytes()
	return ms
}

// gogcMetric is the runtime metric of the collector's GOGC.
const gogcMetric = "/gc/gogc:percent"

// gcPercent is the collector's GOGC now (-1: off).
func gcPercent() int64 {
	sample := []metrics.Sample{{Name: gogcMetric}}
	metrics.Read(sample)
	return gcPercentOf(sample[0].Value)
}

// gcPercentOf is GOGC from the value of gogcMetric: off reads as the
// uint64 of -1 (0 when the runtime does not have the metric).
func gcPercentOf(v metrics.Value) int64 {
	if v.Kind() != metrics.KindUint64 {
		return 0
	}
	if p := v.Uint64(); p <= math.MaxInt64 {
		return int64(p)
	}
	return -1
}

// rssBytes is the process's resident set from /proc (0 elsewhere).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
