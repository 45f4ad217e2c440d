package consumer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"memindex"
	"memindex/chunker"
	"memindex/store"
)

// referenceSessions is the per-session planning the set-based one replaced:
// three reads a session (all of its chunk spans, its messages from where
// re-chunking starts, the messages before that), then the same chunking.
// It returns the batch's messages and re-chunked tails and the ids of the
// chunks that need vectors.
func referenceSessions(ctx context.Context, sh *store.Shard, p *planner, cc chunker.Config) ([]store.Message, []store.SessionChunks, []string, error) {
	var msgs []store.Message
	var rechunk []store.SessionChunks
	var fresh []string
	for _, ref := range p.order {
		sp := p.sessions[ref]
		if len(sp.msgs) == 0 {
			continue
		}
		news := make([]store.Message, 0, len(sp.msgs))
		for _, m := range sp.msgs {
			news = append(news, m)
		}
		sort.Slice(news, func(i, j int) bool { return news[i].Seq < news[j].Seq })
		msgs = append(msgs, news...)
		from := int64(1)
		var spans []store.ChunkSpan
		var stored, before []store.Message
		if !sp.reset {
			var err error
			if spans, err = sh.SessionChunkSpans(ctx, ref); err != nil {
				return nil, nil, nil, err
			}
			from = rechunkFrom(spans, news[0].Seq)
			if stored, err = sh.SessionMessages(ctx, ref, from, 0); err != nil {
				return nil, nil, nil, err
			}
			if before, err = sh.SessionMessagesBefore(ctx, ref, from, cc.WithDefaults().ContextMessages); err != nil {
				return nil, nil, nil, err
			}
		}
		w := sessionWork{sp: sp, news: news, from: from, spans: spans, tail: store.SessionTail{Before: before, From: stored}}
		sc, f := rechunkSession(cc, &w)
		rechunk = append(rechunk, sc)
		for _, c := range f {
			fresh = append(fresh, c.ID)
		}
	}
	return msgs, rechunk, fresh, nil
}

// TestSetBasedPlanEqualsPerSessionPlan applies interleaved sessions to a
// real shard in random orders and batch splits (re-sent messages, messages
// split into pieces, deletions, records that name a session) and checks, for
// every batch, that the set-based plan is the per-session one: the same
// messages, the same re-chunked tails from the same seq, the same chunks
// needing vectors.
func TestSetBasedPlanEqualsPerSessionPlan(t *testing.T) {
	ctx := context.Background()
	cc := chunker.Config{BudgetTokens: 40}
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau")
	for trial := range 12 {
		r := rand.New(rand.NewPCG(uint64(trial), 7))
		sh, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"), store.Config{Dims: 8})
		if err != nil {
			t.Fatal(err)
		}
		var events []memindex.Event
		for s := range 2 + r.IntN(12) {
			key, id := fmt.Sprintf("k%d", s%4), fmt.Sprintf("s%d", s)
			seq := int64(0)
			for range 1 + r.IntN(30) {
				seq += 1 + int64(r.IntN(2)) // gaps in seq are allowed
				var text []string
				for range 1 + r.IntN(60) { // some messages split into pieces
					text = append(text, words[r.IntN(len(words))])
				}
				events = append(events, memindex.Event{Type: memindex.TypeMessage, Namespace: "ns", SessionKey: key, SessionID: id,
					Seq: seq, ID: fmt.Sprintf("%s-%d", id, seq), Speaker: "Ana", Text: strings.Join(text, " "), Timestamp: "2026-11-30T09:00:00Z"})
			}
			if r.IntN(3) == 0 {
				events = append(events, memindex.Event{Type: memindex.TypeRecordUpserted, Namespace: "ns", ID: "rec-" + id,
					SessionKey: key, SessionID: id, Text: "a fact about " + id})
			}
		}
		order := r.Perm(len(events))
		order = append(order, r.Perm(len(events))[:len(events)/4]...) // re-sent events
		var applied uint64
		for len(order) > 0 {
			size := 1 + r.IntN(min(40, len(order)))
			pl := newPlanner()
			for _, i := range order[:size] {
				pl.add(events[i])
			}
			if r.IntN(8) == 0 { // now and then a session goes
				e := events[order[0]]
				if e.Type == memindex.TypeMessage {
					pl.add(memindex.Event{Type: memindex.TypeSessionDeleted, Namespace: "ns", SessionKey: e.SessionKey, SessionID: e.SessionID})
				}
			}
			order = order[size:]
			wantMsgs, wantRechunk, wantFresh, err := referenceSessions(ctx, sh, pl, cc)
			if err != nil {
				t.Fatal(err)
			}
			applied++
			b, fresh, err := pl.build(ctx, sh, cc, chunker.MarkdownConfig{}.WithDefaults(), applied)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(b.Messages, wantMsgs) {
				t.Fatalf("trial %d batch %d: messages differ:\n got %+v\nwant %+v", trial, applied, b.Messages, wantMsgs)
			}
			if !reflect.DeepEqual(b.Rechunk, wantRechunk) {
				t.Fatalf("trial %d batch %d: re-chunked tails differ:\n got %+v\nwant %+v", trial, applied, b.Rechunk, wantRechunk)
			}
			var gotFresh []string
			for _, c := range fresh {
				if c.Source == memindex.SourceSessions {
					gotFresh = append(gotFresh, c.ID)
				}
			}
			if !reflect.DeepEqual(gotFresh, wantFresh) {
				t.Fatalf("trial %d batch %d: chunks needing vectors %v, want %v", trial, applied, gotFresh, wantFresh)
			}
			if _, err := sh.Apply(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		if err := sh.Check(ctx); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		sh.Close(ctx)
	}
}
