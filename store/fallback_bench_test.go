package store

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// vectorModes are the two ways a shard keeps its vectors, for benchmarks.
var vectorModes = []struct {
	name string
	cfg  Config
}{
	{VectorModeSqliteVec, Config{Dims: benchDims}},
	{VectorModeGoScan, Config{Dims: benchDims, NoSqliteVec: true}},
}

// benchShardMode is benchShard in either vector mode. The go-scan fixture
// is kept in fixtures under -chunks (closed by TestMain like the others).
func benchShardMode(b *testing.B, chunks int, cfg Config) *Shard {
	b.Helper()
	if !cfg.NoSqliteVec {
		return benchShard(b, chunks)
	}
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if s := fixtures[-chunks]; s != nil {
		return s
	}
	b.StopTimer()
	defer b.StartTimer()
	path := filepath.Join(benchFixtureDir(b), fmt.Sprintf("shard-goscan-%d.db", chunks))
	s := buildBenchShard(b, path, chunks, cfg)
	fixtures[-chunks] = s
	return s
}

// benchFixtureDir returns fixtureDir, creating it on first use (callers
// hold fixtureMu or run before any benchmark does).
func benchFixtureDir(b *testing.B) string {
	b.Helper()
	if fixtureDir == "" {
		d, err := os.MkdirTemp("", "memindex-store-bench-")
		if err != nil {
			b.Fatal(err)
		}
		fixtureDir = d
	}
	return fixtureDir
}

// buildBenchShard opens path with cfg and fills it as benchShard does.
func buildBenchShard(b *testing.B, path string, chunks int, cfg Config) *Shard {
	b.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path, cfg)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(chunks), 1))
	const per = 500
	for i := 0; i*per < chunks; i++ {
		if _, err := s.Apply(ctx, benchBatch(r, "bench", i, min(per, chunks-i*per), benchDims)); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := s.Apply(ctx, benchBatch(r, "other", 100000+i, per, benchDims)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA optimize; PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkApplyVectorMode is BenchmarkApply (200 chunks a batch, each with
// a 384-dim vector) in both vector modes.
func BenchmarkApplyVectorMode(b *testing.B) {
	for _, m := range vectorModes {
		b.Run("mode="+m.name, func(b *testing.B) {
			const per = 200
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "shard.db"), m.cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close(ctx) })
			if mode, _ := s.VectorMode(); mode != m.name {
				b.Fatalf("VectorMode()=%s, want %s", mode, m.name)
			}
			r := rand.New(rand.NewPCG(1, 2))
			batches := make([]Batch, b.N)
			for i := range batches {
				batches[i] = benchBatch(r, "bench", i, per, benchDims)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Apply(ctx, batches[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "chunks/s")
		})
	}
}

// BenchmarkVectorSearchVectorMode is BenchmarkVectorSearch (top 10 of
// 10,000 chunks of 384 dims) in both vector modes.
func BenchmarkVectorSearchVectorMode(b *testing.B) {
	for _, m := range vectorModes {
		b.Run("mode="+m.name+"/chunks=10000", func(b *testing.B) {
			s := benchShardMode(b, 10000, m.cfg)
			if mode, _ := s.VectorMode(); mode != m.name {
				b.Fatalf("VectorMode()=%s, want %s", mode, m.name)
			}
			ctx := context.Background()
			r := rand.New(rand.NewPCG(3, 4))
			qs := make([][]float32, 64)
			for i := range qs {
				qs[i] = randVec(r, benchDims)
			}
			timed(b, func(i int) {
				got, err := s.VectorSearch(ctx, "bench", qs[i%len(qs)], Filter{}, 10)
				if err != nil || len(got) != 10 {
					b.Fatalf("VectorSearch: %d hits, %v", len(got), err)
				}
			})
		})
	}
}

// BenchmarkOpenVectorMode measures Open (migrations checked, vec0 probed,
// the in-memory index loaded from vec0's shadow tables or vec_plain) and
// Close of a shard of 10,000 chunks with vectors (plus 1,000 in another
// namespace) in both modes, and the one-time switches: a sqlite-vec file
// opened without sqlite-vec (vectors copied to vec_plain) and back (moved
// into vec0).
func BenchmarkOpenVectorMode(b *testing.B) {
	const chunks = 10000
	ctx := context.Background()
	dir := b.TempDir()
	src := map[string]string{}
	for _, m := range vectorModes {
		path := filepath.Join(dir, m.name+".db")
		s := buildBenchShard(b, path, chunks, m.cfg)
		if err := s.Close(ctx); err != nil {
			b.Fatal(err)
		}
		src[m.name] = path
	}
	cases := []struct {
		name string
		from string
		cfg  Config
		copy bool // open a fresh copy each time (a switch happens once per file)
	}{
		{"mode=sqlite-vec", VectorModeSqliteVec, vectorModes[0].cfg, false},
		{"mode=go-scan", VectorModeGoScan, vectorModes[1].cfg, false},
		{"switch=sqlite-vec-to-go-scan", VectorModeSqliteVec, vectorModes[1].cfg, true},
		{"switch=go-scan-to-sqlite-vec", VectorModeGoScan, vectorModes[0].cfg, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			want := VectorModeSqliteVec
			if c.cfg.NoSqliteVec {
				want = VectorModeGoScan
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				path := src[c.from]
				if c.copy {
					b.StopTimer()
					path = filepath.Join(b.TempDir(), "copy.db")
					copyFile(b, src[c.from], path)
					b.StartTimer()
				}
				s, err := Open(ctx, path, c.cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if mode, _ := s.VectorMode(); mode != want || s.indexLen() != chunks+1000 {
					b.Fatalf("VectorMode()=%s with %d vectors, want %s with %d", mode, s.indexLen(), want, chunks+1000)
				}
				if err := s.Close(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

func copyFile(tb testing.TB, from, to string) {
	tb.Helper()
	in, err := os.Open(from)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}
