package store

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"math/rand/v2"
)

// TestKeywordIndexMemory reports, with MEMINDEX_KW_MEM=N, the keyword
// index of N generated chunks: its load time at Open, its measured heap
// (the heap after loading it less the heap without it) and the estimate
// Stats reports, which must be within a factor 2 of the measure.
func TestKeywordIndexMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("MEMINDEX_KW_MEM"))
	if n == 0 {
		t.Skip("set MEMINDEX_KW_MEM=chunks to measure")
	}
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(3, 4))
	vocab := make([]string, 20000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%x", i*2654435761%1000003)
	}
	word := func() string {
		// Zipf-like over a 20,000-word vocabulary
		return vocab[int(float64(len(vocab))*r.Float64()*r.Float64()*r.Float64())]
	}
	for done := 0; done < n; {
		var b Batch
		for si := 0; si < 50 && done < n; si++ {
			sc := SessionChunks{Session: SessionRef{Namespace: "n", SessionKey: fmt.Sprint("k", done%1000), SessionID: fmt.Sprint("s", done)}}
			for i := 0; i < 20 && done < n; i++ {
				text, ctxt := "Ana:", ""
				for range 25 {
					text += " " + word()
				}
				for range 40 {
					ctxt += " " + word()
				}
				sc.Chunks = append(sc.Chunks, Chunk{ID: fmt.Sprint("c", done), Source: "sessions", SeqStart: int64(i), SeqEnd: int64(i), Text: text, Context: ctxt})
				done++
			}
			b.Rechunk = append(b.Rechunk, sc)
		}
		mustApply(t, s, b)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	s.kw.Store(nil)
	without := heap()
	start := time.Now()
	if err := s.loadKeywordIndex(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	with := heap()
	st := s.kw.Load().stats()
	measured := int64(with) - int64(without)
	t.Logf("%d chunks: loaded in %v; heap +%.1f MiB measured, %.1f MiB estimated; %d terms, %d postings, %d tokens",
		n, took.Round(time.Millisecond), float64(measured)/(1<<20), float64(st.bytes)/(1<<20), st.terms, st.postings, st.tokens)
	if st.bytes < measured/2 || st.bytes > measured*2 {
		t.Fatalf("estimate %d bytes, measured %d", st.bytes, measured)
	}
}
