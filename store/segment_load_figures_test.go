package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSegmentFigures measures, in a fresh process, the time from Open to the
// answer of the first Chinese keyword search and the Go heap and RSS it
// leaves, for a shard of Chinese or of English chunks. It reports, never
// asserts; run each step in its own process:
//
//	MEMINDEX_SEGFIG=build:DIR go test -tags sqlite_fts5 -run TestSegmentFigures ./store/
//	MEMINDEX_SEGFIG=zh:DIR    go test ... (then en:DIR)
func TestSegmentFigures(t *testing.T) {
	step, dir, ok := strings.Cut(os.Getenv("MEMINDEX_SEGFIG"), ":")
	if !ok {
		t.Skip("set MEMINDEX_SEGFIG=build|zh|en:DIR")
	}
	ctx := context.Background()
	if step == "build" {
		for _, lang := range []string{"zh", "en"} {
			s, err := Open(ctx, filepath.Join(dir, lang+".db"), Config{Dims: testDims})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < 10; i++ {
				mustApply(t, s, textBatch(r, lang, i, 200))
			}
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	mem := func() string {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		rss := ""
		if b, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
					rss += " " + strings.Join(strings.Fields(l), " ")
				}
			}
		}
		return fmt.Sprintf("heap %.1f MiB%s", float64(m.HeapAlloc)/(1<<20), rss)
	}
	before := mem()
	start := time.Now()
	s, err := Open(ctx, filepath.Join(dir, step+".db"), Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	opened := time.Since(start)
	q := time.Now()
	got, err := s.KeywordSearch(ctx, "bench", "人工智能公司的新工作", Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Since(q)
	q = time.Now()
	if _, err := s.KeywordSearch(ctx, "bench", "机器学习模型的训练数据", Filter{}, 10); err != nil {
		t.Fatal(err)
	}
	second := time.Since(q)
	time.Sleep(3 * time.Second) // a background load, if any, is done: measure what it left
	t.Logf("%s shard: before Open %s; Open %v, first CJK search %v (%d hits), second %v; after %s",
		step, before, opened, first, len(got), second, mem())
}
