package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestStatsCountsWhatSearchesFind: Stats never counts a batch the keyword
// index does not hold yet. A Stats taken, with a keyword search after it,
// while a batch is committed but not yet posted to the in-memory indexes
// (the apply hook's "commit" stage) must either not count the batch or find
// it. Without Shard.visible the Stats sees the commit and the search, run
// before the hook returns, misses it.
func TestStatsCountsWhatSearchesFind(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, 8)
	for round := range 3 {
		ns := fmt.Sprintf("ns%d", round)
		msgs, sc := session(ns, "k", "s", 4, nil, 8)
		type seen struct {
			st   Stats
			hits int
			err  error
		}
		got := make(chan seen, 1)
		s.applyHook = func(stage string) error {
			if stage != "commit" {
				return nil
			}
			go func() {
				st, err := s.Stats(ctx)
				var cs []Candidate
				if err == nil {
					cs, err = s.KeywordSearch(ctx, ns, "topic1", Filter{}, 10)
				}
				got <- seen{st, len(cs), err}
			}()
			select { // bounded: the Stats above waits for this hook's batch to be indexed
			case v := <-got:
				got <- v
			case <-time.After(100 * time.Millisecond):
			}
			return nil
		}
		before, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mustApply(t, s, Batch{Seq: uint64(round + 1), Messages: msgs, Rechunk: []SessionChunks{sc}})
		s.applyHook = nil
		v := <-got
		if v.err != nil {
			t.Fatal(v.err)
		}
		if counted := v.st.Messages > before.Messages; counted && v.hits == 0 {
			t.Fatalf("round %d: Stats counted the batch (%d messages, %d before) but a keyword search after it found none of it", round, v.st.Messages, before.Messages)
		}
	}
}

// TestWaitIndexedWaitsForTheIndexes: WaitIndexed called between a
// commit and the in-memory indexes' update returns only once the keyword
// index holds the batch.
func TestWaitIndexedWaitsForTheIndexes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	committed, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // a failing check must not leave the commit waiting
	s.applyHook = func(stage string) error {
		if stage == "commit" {
			close(committed)
			<-release
		}
		return nil
	}
	applied := make(chan error, 1)
	go func() {
		_, err := s.Apply(ctx, Batch{Seq: 1, Rechunk: []SessionChunks{{Session: SessionRef{"n", "k", "s"},
			Chunks: []Chunk{{ID: "walrus", Text: "the walrus arrives"}}}}})
		applied <- err
	}()
	<-committed
	waited := make(chan []Candidate, 1)
	go func() {
		s.WaitIndexed()
		got, _ := s.KeywordSearch(ctx, "n", "walrus", Filter{}, 10)
		waited <- got
	}()
	select {
	case <-waited:
		t.Fatal("WaitIndexed returned while the commit's indexes were not updated")
	case <-time.After(50 * time.Millisecond): // it must still be waiting; a wrong return is caught above or below
	}
	unblock()
	if got := <-waited; len(got) != 1 || got[0].ID != "walrus" {
		t.Fatalf("keyword search after WaitIndexed = %v, want the committed walrus", got)
	}
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
}

// TestCommittedRunsOnceTheTransactionCommits: Batch.Committed is called
// once a batch's transaction has committed (a reader of the file sees its
// applied sequence) and before the in-memory indexes hold it (AppliedSeq,
// which searches read, is still the one before); a batch that fails in its
// transaction never calls it.
func TestCommittedRunsOnceTheTransactionCommits(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, 8)
	msgs, sc := session("ns", "k", "s", 4, nil, 8)
	calls := 0
	var fileSeq, indexedSeq uint64
	var readErr error
	b := Batch{Seq: 7, Messages: msgs, Rechunk: []SessionChunks{sc}, Committed: func() {
		calls++
		fileSeq, readErr = readAppliedSeq(ctx, s.r)
		indexedSeq, _ = s.AppliedSeq(ctx)
	}}
	mustApply(t, s, b)
	if calls != 1 || readErr != nil || fileSeq != 7 || indexedSeq != 0 {
		t.Fatalf("Committed: %d calls, the file's applied seq %d (%v), the indexes' %d; want 1 call seeing 7 in the file and 0 in the indexes",
			calls, fileSeq, readErr, indexedSeq)
	}
	if got, _ := s.AppliedSeq(ctx); got != 7 {
		t.Fatalf("AppliedSeq() after Apply = %d, want 7", got)
	}

	calls = 0
	msgs2, sc2 := session("ns", "k", "s2", 3, nil, 8)
	s.applyHook = func(stage string) error {
		if stage == "seq" {
			return fmt.Errorf("injected at %s", stage)
		}
		return nil
	}
	_, err := s.Apply(ctx, Batch{Seq: 9, Messages: msgs2, Rechunk: []SessionChunks{sc2}, Committed: func() { calls++ }})
	s.applyHook = nil
	if err == nil || calls != 0 {
		t.Fatalf("Apply failing in its transaction: %v, Committed called %d times; want an error and no call", err, calls)
	}
}
