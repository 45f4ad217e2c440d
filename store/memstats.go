package store

import "fmt"

// bytes estimates the vector index's heap: per vector its int8 codes and
// scale, its 1-bit sketch (vecbits.go), rowid, id, four symbols, two times
// and its slot in pos; and the symbols' strings.
func (x *vectorIndex) bytes() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var n int64
	for _, sp := range x.spaces {
		for _, b := range sp.blocks {
			n += int64(cap(b))
		}
		for _, b := range sp.bits {
			n += int64(cap(b))
		}
		n += int64(cap(sp.bitPopInv))*4 + int64(cap(sp.bitInv))*4
		n += int64(cap(sp.rowids)) * (4 + 8 + 20 + 4*4 + 2*8 + 40)
	}
	return n + x.exactBytes + x.syms.bytes()
}

// MemoryBudget splits a worker's memory limit of limit bytes between the
// SQLite page caches of its shards (a quarter, spread over shards shards
// of 1+readConns connections each, at least minCacheKiB a connection) and
// the Go heap (the rest: the soft limit for debug.SetMemoryLimit, which the
// keyword and vector indexes live in). It returns Config.CacheKiB, the
// caches' total and the Go limit, or an error when the limit leaves the Go
// heap less than 64 MiB. Shards opened this way should map nothing
// (MmapBytes -1): mapped pages count in the process's RSS.
func MemoryBudget(limit int64, shards, readConns int) (cacheKiB int, sqliteBytes, goLimit int64, err error) {
	if shards < 1 {
		shards = 1
	}
	if readConns == 0 {
		readConns = defaultReadConns
	}
	conns := int64(shards) * int64(1+readConns)
	cacheKiB = max(int(limit/4/conns>>10), minCacheKiB)
	sqliteBytes = conns * int64(cacheKiB) << 10
	goLimit = limit - sqliteBytes
	if goLimit < 64<<20 {
		return 0, 0, 0, fmt.Errorf("memory limit %d MiB: %d shards' SQLite caches (%d MiB at %d KiB a connection) leave the Go heap %d MiB, under 64: %w",
			limit>>20, shards, sqliteBytes>>20, minCacheKiB, goLimit>>20, ErrInvalidConfig)
	}
	return cacheKiB, sqliteBytes, goLimit, nil
}

// minCacheKiB is the smallest page cache MemoryBudget gives a connection.
const minCacheKiB = 512
