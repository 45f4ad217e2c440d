package consumer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"memindex"
	"memindex/chunker"
	"memindex/store"
)

// TestPlanAnyArrivalOrderGivesTheCleanChunking applies a session's messages
// to a real shard in random orders and random batch splits, re-sending some,
// and checks that the stored chunks are always those of chunking the whole
// session at once.
func TestPlanAnyArrivalOrderGivesTheCleanChunking(t *testing.T) {
	ctx := context.Background()
	cc := chunker.Config{BudgetTokens: 60}
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau")
	for trial := range 40 {
		r := rand.New(rand.NewPCG(uint64(trial), 99))
		sh, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"), store.Config{Dims: 8})
		if err != nil {
			t.Fatal(err)
		}
		n := 5 + r.IntN(40)
		var events []memindex.Event
		var want []chunker.Message
		for i := 1; i <= n; i++ {
			seq := int64(i * (1 + r.IntN(2))) // gaps in seq are allowed
			if len(want) > 0 && seq <= want[len(want)-1].Seq {
				seq = want[len(want)-1].Seq + 1
			}
			var text []string
			for range 1 + r.IntN(30) {
				text = append(text, words[r.IntN(len(words))])
			}
			e := memindex.Event{Type: memindex.TypeMessage, Namespace: "ns", SessionKey: "k", SessionID: "s", Seq: seq,
				Speaker: "Ana", Text: strings.Join(text, " ")}
			events = append(events, e)
			want = append(want, chunker.Message{Seq: seq, Speaker: "Ana", Text: e.Text})
		}
		order := r.Perm(len(events))
		order = append(order, r.Perm(len(events))[:len(events)/4]...) // re-sent events
		var applied uint64
		for len(order) > 0 {
			size := 1 + r.IntN(min(8, len(order)))
			pl := newPlanner()
			for _, i := range order[:size] {
				pl.add(events[i])
			}
			order = order[size:]
			applied++
			b, _, err := pl.build(ctx, sh, cc, chunker.MarkdownConfig{}.WithDefaults(), applied)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sh.Apply(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		ref := store.SessionRef{Namespace: "ns", SessionKey: "k", SessionID: "s"}
		got, err := sh.SessionChunkSpans(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		clean := chunker.Session(cc, chunkScope(ref), want)
		if fmt.Sprint(spanIDs(got)) != fmt.Sprint(chunkIDs(clean)) {
			t.Fatalf("trial %d: stored chunks %v, want the clean chunking %v", trial, spans(got), cleanSpans(clean))
		}
		if err := sh.Check(ctx); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		sh.Close(ctx)
	}
}

func spanIDs(ss []store.ChunkSpan) (out []string) {
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func chunkIDs(cs []chunker.Chunk) (out []string) {
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func spans(ss []store.ChunkSpan) (out []string) {
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%d-%d/%d", s.SeqStart, s.SeqEnd, s.Part))
	}
	return out
}

func cleanSpans(cs []chunker.Chunk) (out []string) {
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%d-%d/%d", c.SeqStart, c.SeqEnd, c.Part))
	}
	return out
}
