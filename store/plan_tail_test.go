package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestSessionTailMessagesEqualsThePerSessionReads asks SessionTailMessages
// for many sessions at once (more than one statement's worth) and checks
// each answer against SessionMessages and SessionMessagesBefore of that
// session alone.
func TestSessionTailMessagesEqualsThePerSessionReads(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, 8)
	r := rand.New(rand.NewPCG(3, 4))
	var reqs []TailRequest
	for i := range 2*tailSessionsPerQuery + 17 {
		n := r.IntN(12) // some sessions hold nothing
		msgs, sc := session("ns", fmt.Sprintf("k%d", i%7), fmt.Sprintf("s%d", i), n, nil, 8)
		mustApply(t, s, Batch{Messages: msgs, Rechunk: []SessionChunks{sc}})
		reqs = append(reqs, TailRequest{Session: sc.Session, Seq: int64(r.IntN(n + 2))})
	}
	for _, before := range []int{0, 1, 2, 5} {
		got, err := s.SessionTailMessages(ctx, reqs, before)
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range reqs {
			from, err := s.SessionMessages(ctx, q.Session, q.Seq, 0)
			if err != nil {
				t.Fatal(err)
			}
			prev, err := s.SessionMessagesBefore(ctx, q.Session, q.Seq, before)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[i].From, from) || !reflect.DeepEqual(got[i].Before, prev) {
				t.Fatalf("before=%d, %+v: SessionTailMessages = %+v, want From %+v, Before %+v", before, q, got[i], from, prev)
			}
		}
	}
}

// TestSessionTailSpansIsTheTailOfTheSpans checks SessionTailSpans against
// SessionChunkSpans: for each session, the suffix from the last chunk that
// starts before the seq asked (above 0), or every chunk when none does.
func TestSessionTailSpansIsTheTailOfTheSpans(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, 8)
	r := rand.New(rand.NewPCG(5, 6))
	var reqs []TailRequest
	for i := range tailSessionsPerQuery + 31 {
		n := r.IntN(10)
		msgs, sc := session("ns", "k", fmt.Sprintf("s%d", i), n, nil, 8)
		mustApply(t, s, Batch{Messages: msgs, Rechunk: []SessionChunks{sc}})
		reqs = append(reqs, TailRequest{Session: sc.Session, Seq: int64(r.IntN(n + 2))})
	}
	got, err := s.SessionTailSpans(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range reqs {
		all, err := s.SessionChunkSpans(ctx, q.Session)
		if err != nil {
			t.Fatal(err)
		}
		from := 0
		for j, c := range all {
			if c.SeqStart > 0 && c.SeqStart < q.Seq && (j == 0 || all[j-1].SeqStart != c.SeqStart) {
				from = j // the first piece of the last chunk before q.Seq
			}
		}
		if want := all[from:]; !slices.Equal(got[i], want) && (len(got[i]) > 0 || len(want) > 0) {
			t.Fatalf("%+v: SessionTailSpans = %+v, want %+v (of %+v)", q, got[i], want, all)
		}
	}
}
