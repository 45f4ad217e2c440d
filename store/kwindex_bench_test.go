package store

import (
	"context"
	"math/rand/v2"
	"testing"
)

// BenchmarkKeywordIndex ranks generated questions in one namespace of
// about 6,000 chunks (LoCoMo's size), within one session key, by the
// keyword index and by FTS5.
func BenchmarkKeywordIndex(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, testDims)
	r := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		var batch Batch
		for si := range 30 {
			sc := SessionChunks{Session: SessionRef{Namespace: "n", SessionKey: "k" + string(rune('a'+si%10)), SessionID: "s" + string(rune('a'+si))}}
			for i := range 20 {
				sc.Chunks = append(sc.Chunks, Chunk{ID: sc.Session.SessionKey + sc.Session.SessionID + string(rune('a'+i)) + kwText(r, 2),
					Source: "sessions", SeqStart: int64(i), SeqEnd: int64(i), Text: kwSpeakers[i%4] + ": " + kwText(r, 25), Context: kwText(r, 40)})
			}
			batch.Rechunk = append(batch.Rechunk, sc)
		}
		mustApply(b, s, batch)
	}
	qs := make([]string, 200)
	for i := range qs {
		qs[i] = "What did Ana say about " + kwText(r, 5) + "?"
	}
	f := Filter{SessionKey: "kc"}
	kw := s.kw.Load()
	b.Run("index", func(b *testing.B) {
		s.kw.Store(kw)
		for i := 0; b.Loop(); i++ {
			if _, err := s.KeywordSearch(ctx, "n", qs[i%len(qs)], f, 10); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fts5", func(b *testing.B) {
		s.kw.Store(nil)
		defer s.kw.Store(kw)
		for i := 0; b.Loop(); i++ {
			if _, err := s.KeywordSearch(ctx, "n", qs[i%len(qs)], f, 10); err != nil {
				b.Fatal(err)
			}
		}
	})
}
