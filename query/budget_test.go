package query

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"memindex"
	"memindex/chunker"
	"memindex/embedder"
	"memindex/store"
)

// messageShard stores one session of n chatty messages about trips, plus
// one long message about a trip to Lisbon split into several pieces, chunked
// by the chunker (one chunk a message) and embedded by the built-in
// embedder, in a real shard. It returns the shard, the embedder and the
// messages by seq.
func messageShard(t *testing.T, n int) (*store.Shard, embedder.Embedder, map[int64]store.Message) {
	t.Helper()
	ctx := context.Background()
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: 64})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"), store.Config{Dims: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close(context.Background()) })
	ref := store.SessionRef{Namespace: "ns", SessionKey: "chat", SessionID: "s1"}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var msgs []store.Message
	var cms []chunker.Message
	long := strings.Repeat("We took the train to Lisbon and the trip was long but lovely. ", 30)
	for i := 1; i <= n; i++ {
		speaker := []string{"Ana", "Ben"}[i%2]
		text := fmt.Sprintf("message %d: the trip plans for week %d look fine", i, i)
		if i == n/2 {
			text = long
		}
		m := store.Message{Namespace: "ns", SessionKey: "chat", SessionID: "s1", Seq: int64(i), ID: fmt.Sprintf("m%d", i),
			Speaker: speaker, Text: text, Time: t0.Add(time.Duration(i) * time.Minute)}
		msgs = append(msgs, m)
		cms = append(cms, chunker.Message{Seq: m.Seq, ID: m.ID, Speaker: m.Speaker, Text: m.Text, Time: m.Time})
	}
	cs := chunker.Session(chunker.Config{BudgetTokens: 60}, "ns\x00chat\x00s1", cms)
	sc := store.SessionChunks{Session: ref, From: 1}
	pieces := 0
	for _, c := range cs {
		v, err := emb.Embed(ctx, embedder.Request{Texts: []string{chunker.EmbedText(c.Context, c.Text)}})
		if err != nil {
			t.Fatal(err)
		}
		if c.SeqStart == int64(n/2) {
			pieces++
		}
		sc.Chunks = append(sc.Chunks, store.Chunk{ID: c.ID, Namespace: "ns", Source: memindex.SourceSessions, SessionKey: "chat", SessionID: "s1",
			SeqStart: c.SeqStart, SeqEnd: c.SeqEnd, Part: c.Part, Text: c.Text, Context: c.Context, TimeStart: c.TimeStart, TimeEnd: c.TimeEnd, Vector: v[0]})
	}
	if pieces < 3 {
		t.Fatalf("the long message was cut into %d pieces, want at least 3", pieces)
	}
	if _, err := sh.Apply(ctx, store.Batch{Seq: 1, Messages: msgs, Rechunk: []store.SessionChunks{sc}}); err != nil {
		t.Fatal(err)
	}
	bySeq := map[int64]store.Message{}
	for _, m := range msgs {
		bySeq[m.Seq] = m
	}
	return sh, emb, bySeq
}

func searchShard(t *testing.T, sh *store.Shard, emb embedder.Embedder, req memindex.SearchRequest) memindex.SearchResponse {
	t.Helper()
	e := NewEngine(EngineConfig{}, RouterFunc(func(string) (Searcher, int, error) { return sh, 0, nil }), emb)
	req.Namespace = "ns"
	resp, err := e.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestSessionHitsAreWholeMessagesNeverRepeated(t *testing.T) {
	sh, emb, msgs := messageShard(t, 30)
	for _, mode := range []string{memindex.ModeHybrid, memindex.ModeKeyword, memindex.ModeVector} {
		t.Run(mode, func(t *testing.T) {
			resp := searchShard(t, sh, emb, memindex.SearchRequest{Query: "train trip to Lisbon", K: 20, Mode: mode})
			if len(resp.Hits) < 10 {
				t.Fatalf("%d hits, want at least 10", len(resp.Hits))
			}
			seen := map[int64]bool{}
			foundLong := false
			for i, h := range resp.Hits {
				if seen[h.Seq] {
					t.Fatalf("hit %d: message %d is already in this response", i, h.Seq)
				}
				seen[h.Seq] = true
				m, ok := msgs[h.Seq]
				if !ok || h.Seq == 0 {
					t.Fatalf("hit %d has seq %d, not a stored message", i, h.Seq)
				}
				if h.Text != m.Text || h.Speaker != m.Speaker || h.MessageID != m.ID || h.SeqStart != h.Seq || h.SeqEnd != h.Seq {
					t.Fatalf("hit %d = %+v, want the whole message %+v", i, h, m)
				}
				if len(h.MessageIDs) != 1 || h.MessageIDs[0] != m.ID {
					t.Fatalf("hit %d messageIds = %v, want [%s]", i, h.MessageIDs, m.ID)
				}
				foundLong = foundLong || h.Seq == 15
			}
			if mode != memindex.ModeVector && !foundLong {
				t.Fatalf("the long Lisbon message is not among the hits %v", seen)
			}
			if resp.Used.Hits != len(resp.Hits) || resp.Used.Messages != len(resp.Hits) {
				t.Fatalf("used = %+v, want %d hits and messages", resp.Used, len(resp.Hits))
			}
		})
	}
}

func TestBudgetIsHonouredExactly(t *testing.T) {
	sh, emb, _ := messageShard(t, 30)
	all := searchShard(t, sh, emb, memindex.SearchRequest{Query: "trip plans week", K: 30})
	if len(all.Hits) < 20 {
		t.Fatalf("%d hits without a budget, want at least 20", len(all.Hits))
	}
	for _, budget := range []int{1, 3, 5, 10} {
		t.Run(fmt.Sprint("budget ", budget), func(t *testing.T) {
			resp := searchShard(t, sh, emb, memindex.SearchRequest{Query: "trip plans week", K: 30, Budget: budget})
			if len(resp.Hits) != budget || resp.Used.Messages != budget || resp.Used.Stopped != "budget" {
				t.Fatalf("budget %d: %d hits, used %+v; want %d hits stopped by the budget", budget, len(resp.Hits), resp.Used, budget)
			}
			for i := range resp.Hits { // the best hits, in rank order
				if resp.Hits[i].ID != all.Hits[i].ID {
					t.Fatalf("budget %d: hit %d is %s, want %s (the unbudgeted order)", budget, i, resp.Hits[i].ID, all.Hits[i].ID)
				}
			}
		})
	}
	if resp := searchShard(t, sh, emb, memindex.SearchRequest{Query: "trip plans week", Budget: 7}); len(resp.Hits) != 7 {
		t.Fatalf("budget 7 without k: %d hits, want 7 (k follows the budget)", len(resp.Hits))
	}
}

func TestBudgetTokensTakesTheBestHitsThatFit(t *testing.T) {
	sh, emb, _ := messageShard(t, 30)
	all := searchShard(t, sh, emb, memindex.SearchRequest{Query: "train trip to Lisbon plans", K: 30})
	for _, budget := range []int{15, 60, 200, 500} {
		t.Run(fmt.Sprint("tokens ", budget), func(t *testing.T) {
			var want []string
			left := budget
			for _, h := range all.Hits {
				if z := chunker.EstimateTokens(h.Speaker + ": " + h.Text); z <= left {
					want = append(want, h.ID)
					left -= z
				}
			}
			resp := searchShard(t, sh, emb, memindex.SearchRequest{Query: "train trip to Lisbon plans", K: 30, BudgetTokens: budget})
			var got []string
			for _, h := range resp.Hits {
				got = append(got, h.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("budgetTokens %d: hits %v, want %v", budget, got, want)
			}
			if resp.Used.Tokens != budget-left || resp.Used.Tokens > budget {
				t.Fatalf("budgetTokens %d: used %+v, want %d tokens", budget, resp.Used, budget-left)
			}
		})
	}
}

func TestAroundNeighboursAreMarkedAndNotCounted(t *testing.T) {
	sh, emb, msgs := messageShard(t, 30)
	resp := searchShard(t, sh, emb, memindex.SearchRequest{Query: "trip plans week 12 week 13 week 20", K: 4, Budget: 4, Around: 2})
	if len(resp.Hits) != 4 || resp.Used.Messages != 4 {
		t.Fatalf("%d hits, used %+v; want 4 hits and 4 messages counted", len(resp.Hits), resp.Used)
	}
	held := map[int64]bool{}
	for _, h := range resp.Hits {
		held[h.Seq] = true
	}
	ctxN := 0
	for _, h := range resp.Hits {
		for _, c := range h.Context {
			if !c.Context {
				t.Fatalf("neighbour %d of hit %d is not marked as context", c.Seq, h.Seq)
			}
			if c.Seq < h.Seq-2 || c.Seq > h.Seq+2 || c.Seq == h.Seq {
				t.Fatalf("neighbour %d of hit %d is not within 2 of it", c.Seq, h.Seq)
			}
			if held[c.Seq] {
				t.Fatalf("message %d is in the response twice (a hit or another hit's context)", c.Seq)
			}
			held[c.Seq] = true
			if m := msgs[c.Seq]; c.Text != m.Text || c.Speaker != m.Speaker || c.MessageID != m.ID {
				t.Fatalf("neighbour %+v, want message %+v", c, m)
			}
			ctxN++
		}
	}
	if ctxN == 0 || resp.Used.ContextMessages != ctxN {
		t.Fatalf("context messages %d, used %+v; want some, all reported", ctxN, resp.Used)
	}
	var tokens int
	for _, h := range resp.Hits {
		tokens += chunker.EstimateTokens(h.Speaker + ": " + h.Text)
		for _, c := range h.Context {
			tokens += chunker.EstimateTokens(c.Speaker + ": " + c.Text)
		}
	}
	if resp.Used.Tokens != tokens {
		t.Fatalf("used tokens %d, want %d (hits and their context)", resp.Used.Tokens, tokens)
	}
}
