package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"

	"memindex"
	"memindex/store"
)

// sizeFlag is a flag of a size in bytes: a number with an optional unit
// (KiB, MiB, GiB, KB, MB, GB; B or none for bytes).
type sizeFlag int64

var _ flag.Value = (*sizeFlag)(nil)

func (b *sizeFlag) String() string {
	if b == nil || *b == 0 {
		return "0"
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *sizeFlag) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = sizeFlag(v)
	return nil
}

func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit (512MiB, 2GiB, 1500MB)", s)
	}
	return v * mult, nil
}

// applyMemoryLimit derives the shards' SQLite page caches and the Go
// heap's soft limit from --memory-limit for a worker that may hold all P
// partitions (store.MemoryBudget); no limit keeps the store's defaults.
func (c *serveConfig) applyMemoryLimit(partitions int) error {
	if c.memoryLimit <= 0 {
		return nil
	}
	kib, sqlite, goLimit, err := store.MemoryBudget(int64(c.memoryLimit), partitions, 0)
	if err != nil {
		return fmt.Errorf("--memory-limit (MEMINDEX_MEMORY_LIMIT): %w", err)
	}
	c.shardCacheKiB, c.sqliteCacheBytes, c.goMemLimit = kib, sqlite, goLimit
	debug.SetMemoryLimit(goLimit)
	return nil
}

// shardConfig is the store configuration of the worker's shards.
func (c *serveConfig) shardConfig(dims int, space string) store.Config {
	sc := store.Config{Dims: dims, Space: space, NoSqliteVec: c.noSqliteVec}
	if c.memoryLimit > 0 {
		sc.CacheKiB, sc.MmapBytes = c.shardCacheKiB, -1
	}
	return sc
}

// memoryStatus reads the worker's memory for status.
func (c *serveConfig) memoryStatus(parts []memindex.PartitionStatus) *memindex.MemoryStatus {
	ms := &memindex.MemoryStatus{LimitBytes: int64(c.memoryLimit), GoLimitBytes: c.goMemLimit, SQLiteCacheBytes: c.sqliteCacheBytes}
	if c.memoryLimit <= 0 {
		ms.GoLimitBytes = 0
		ms.SQLiteCacheBytes = int64(len(parts)) * (store.Config{Dims: 1}).CacheBytes()
	}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		ms.HeapBytes = int64(sample[0].Value.Uint64())
	}
	for _, p := range parts {
		ms.IndexBytes += p.KeywordIndexBytes + p.VectorIndexBytes
	}
	ms.RSSBytes = rssBytes()
	return ms
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
