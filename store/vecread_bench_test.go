package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// BenchmarkRescoreReads times what a search's rescoring reads from SQLite:
// the float32 vectors of 62 random candidates (a top 40's usual count) of
// a shard of 20,000 384-dim vectors, through exactScores with no copy in
// memory, with the file memory-mapped (the default) and without a map (as
// a worker with --memory-limit reads, and as a default one reads past
// SQLite's 2 GiB map). The page cache is 1 MB, a shard of a million
// vectors' share of it: pages come from the map or from the kernel. It
// reports µs a vector; vec0's chunk size sets how many pages a read walks
// (0001_init.sql).
func BenchmarkRescoreReads(b *testing.B) {
	const n, reads = 20000, 62
	for _, mapped := range []bool{true, false} {
		b.Run(fmt.Sprintf("mapped=%v", mapped), func(b *testing.B) {
			ctx := context.Background()
			cfg := Config{Dims: benchDims, VectorCopyBytes: -1, CacheKiB: 1000}
			if !mapped {
				cfg.MmapBytes = -1
			}
			s, err := Open(ctx, filepath.Join(b.TempDir(), "shard.db"), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(ctx)
			rows := fillVectors(b, s, newVecGen("random", 7, benchDims), "bench", n)
			q := newQuantQuery(rows[0].vec)
			r := rand.New(rand.NewPCG(1, 2))
			cands := make([]vecCand, reads)
			b.ResetTimer()
			for range b.N {
				for i := range cands {
					cands[i] = vecCand{rowid: rows[r.IntN(n)].rowid}
				}
				exact := map[int64]float32{}
				if err := s.exactScores(ctx, q, cands, exact); err != nil {
					b.Fatal(err)
				}
				if len(exact) == 0 {
					b.Fatal("no vector read")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*reads), "µs/vector")
		})
	}
}
