package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestMemorySettingsReachEveryConnection: Config.CacheKiB and MmapBytes
// are what the writer and the readers run with, read-write and read-only;
// zero values give the defaults.
func TestMemorySettingsReachEveryConnection(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	check := func(name string, db *sql.DB, cache, mmap int64) {
		t.Helper()
		var c, m int64
		if err := db.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, `PRAGMA mmap_size`).Scan(&m); err != nil {
			t.Fatal(err)
		}
		if c != cache || m != mmap {
			t.Fatalf("%s: cache_size %d, mmap_size %d; want %d, %d", name, c, m, cache, mmap)
		}
	}
	for _, tc := range []struct {
		name        string
		cfg         Config
		cache, mmap int64
		bytes       int64
	}{
		{"defaults", Config{Dims: testDims}, -DefaultCacheKiB, DefaultMmapBytes, 5 * DefaultCacheKiB << 10},
		{"small", Config{Dims: testDims, CacheKiB: 2000, MmapBytes: -1, ReadConns: 2}, -2000, 0, 3 * 2000 << 10},
		{"small read-only", Config{Dims: testDims, CacheKiB: 3000, MmapBytes: 1 << 20, ReadOnly: true}, -3000, 1 << 20, 5 * 3000 << 10},
	} {
		s, err := Open(ctx, path, tc.cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		check(tc.name+" writer", s.w, tc.cache, tc.mmap)
		check(tc.name+" reader", s.r, tc.cache, tc.mmap)
		if got := tc.cfg.CacheBytes(); got != tc.bytes {
			t.Errorf("%s: CacheBytes = %d, want %d", tc.name, got, tc.bytes)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := (Config{Dims: testDims, CacheKiB: -1}).Validate(); err == nil {
		t.Fatal("Validate accepted a negative cache")
	}
}

func TestMemoryBudget(t *testing.T) {
	for _, tc := range []struct {
		limit         int64
		shards, conns int
		kib           int
		sqlite, goLim int64
		fail          bool
	}{
		{1 << 30, 16, 4, 3276, 16 * 5 * 3276 << 10, 1<<30 - 16*5*3276<<10, false},
		{4 << 30, 1, 0, 209715, 5 * 209715 << 10, 4<<30 - 5*209715<<10, false},
		{256 << 20, 64, 4, 512, 64 * 5 * 512 << 10, 256<<20 - 64*5*512<<10, false},
		{128 << 20, 64, 4, 0, 0, 0, true}, // 160 MiB of minimal caches
	} {
		kib, sq, gl, err := MemoryBudget(tc.limit, tc.shards, tc.conns)
		if tc.fail {
			if err == nil {
				t.Errorf("MemoryBudget(%d, %d, %d) = %d, %d, %d; want an error", tc.limit, tc.shards, tc.conns, kib, sq, gl)
			}
			continue
		}
		if err != nil || kib != tc.kib || sq != tc.sqlite || gl != tc.goLim || sq+gl != tc.limit {
			t.Errorf("MemoryBudget(%d, %d, %d) = %d KiB, %d, %d, %v; want %d KiB, %d, %d", tc.limit, tc.shards, tc.conns, kib, sq, gl, err, tc.kib, tc.sqlite, tc.goLim)
		}
	}
}
