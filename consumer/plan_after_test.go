package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"memindex"
	"memindex/chunker"
	"memindex/store"
)

// TestPlanAfterEqualsPlanAfterCommit plans each batch of interleaved
// sessions twice: before the batch ahead of it is applied, from what that
// batch's plan left (buildAfter with prev), and after it is applied, from
// the shard alone. Whenever the first succeeds, both must be the same batch
// with the same chunks needing vectors and leave the same for the next
// batch. Arrival is mostly in order per session, with messages swapped,
// re-sent, split into pieces, sessions deleted and records that name a
// session; at the end the shard passes its consistency check.
func TestPlanAfterEqualsPlanAfterCommit(t *testing.T) {
	ctx := context.Background()
	cc := chunker.Config{BudgetTokens: 40}
	mc := chunker.MarkdownConfig{}.WithDefaults()
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau")
	compared, waited := 0, 0
	for trial := range 10 {
		r := rand.New(rand.NewPCG(uint64(trial), 11))
		sh, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"), store.Config{Dims: 8})
		if err != nil {
			t.Fatal(err)
		}
		sessions := 2 + r.IntN(10)
		next := make([]int64, sessions)
		var events []memindex.Event
		for range 40 + r.IntN(200) {
			s := r.IntN(sessions)
			key, id := fmt.Sprintf("k%d", s%3), fmt.Sprintf("s%d", s)
			switch x := r.IntN(100); {
			case x < 2:
				events = append(events, memindex.Event{Type: memindex.TypeSessionDeleted, Namespace: "ns", SessionKey: key, SessionID: id})
				next[s] = 0
				continue
			case x < 4:
				events = append(events, memindex.Event{Type: memindex.TypeRecordUpserted, Namespace: "ns", ID: "rec-" + id,
					SessionKey: key, SessionID: id, Text: "a fact about " + id, Timestamp: "2026-11-30T09:00:00Z"})
				continue
			}
			next[s] += 1 + int64(r.IntN(2)) // gaps in seq are allowed
			var text []string
			for range 1 + r.IntN(60) { // some messages split into pieces
				text = append(text, words[r.IntN(len(words))])
			}
			events = append(events, memindex.Event{Type: memindex.TypeMessage, Namespace: "ns", SessionKey: key, SessionID: id,
				Seq: next[s], ID: fmt.Sprintf("%s-%d", id, next[s]), Speaker: "Ana", Text: strings.Join(text, " "),
				Timestamp: fmt.Sprintf("2026-11-30T09:%02d:00+02:00", next[s]%60)})
		}
		for i := range len(events) / 10 { // some arrive out of order, some twice
			a := r.IntN(len(events))
			b := min(len(events)-1, a+1+r.IntN(3))
			events[a], events[b] = events[b], events[a]
			if i%2 == 0 {
				events = append(events, events[r.IntN(len(events))])
			}
		}
		var pending *store.Batch
		var prev *afterBatch
		seq := uint64(0)
		for len(events) > 0 {
			size := 1 + r.IntN(min(30, len(events)))
			pl := newPlanner()
			for _, e := range events[:size] {
				pl.add(e)
			}
			events = events[size:]
			seq++
			var spec store.Batch
			var specFresh []*store.Chunk
			var specAfter *afterBatch
			specErr := errNeedsCommit
			if pending == nil || prev != nil {
				spec, specFresh, specAfter, specErr = pl.buildAfter(ctx, sh, cc, mc, seq, prev)
			}
			if pending != nil {
				if _, err := sh.Apply(ctx, *pending); err != nil {
					t.Fatal(err)
				}
			}
			b, fresh, after, err := pl.buildAfter(ctx, sh, cc, mc, seq, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case errors.Is(specErr, errNeedsCommit):
				waited++
			case specErr != nil:
				t.Fatalf("trial %d batch %d: plan before the commit ahead: %v", trial, seq, specErr)
			default:
				compared++
				if !reflect.DeepEqual(spec, b) {
					t.Fatalf("trial %d batch %d: planned before the commit ahead\n %+v\nafter it\n %+v", trial, seq, spec, b)
				}
				if !reflect.DeepEqual(chunkIDsOf(specFresh), chunkIDsOf(fresh)) {
					t.Fatalf("trial %d batch %d: chunks needing vectors %v, after the commit %v", trial, seq, chunkIDsOf(specFresh), chunkIDsOf(fresh))
				}
				if !reflect.DeepEqual(specAfter, after) {
					t.Fatalf("trial %d batch %d: leaves %+v, after the commit %+v", trial, seq, specAfter, after)
				}
			}
			pending, prev = &b, after
		}
		if _, err := sh.Apply(ctx, *pending); err != nil {
			t.Fatal(err)
		}
		if err := sh.Check(ctx); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		sh.Close(ctx)
	}
	if compared < 50 || waited == 0 {
		t.Fatalf("compared %d plans, %d waited for the commit ahead; want many of each", compared, waited)
	}
	t.Logf("compared %d plans; %d waited for the commit ahead", compared, waited)
}

func chunkIDsOf(cs []*store.Chunk) (out []string) {
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}
