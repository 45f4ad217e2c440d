package consumer

import (
	"context"
	"sync"
	"sync/atomic"
)

// commitSlots bounds how many of a worker's partitions commit a batch at
// once (Config.CommitConcurrency, n). Any batch may take one of the first
// max(1, n/2) slots; the other slots go only to a batch of BatchSize
// messages or more, a partition that is behind. Small batches that wait
// for a slot grow and share a commit, which costs less a message; a
// partition that is behind commits beside another on a core that would
// otherwise wait. On 2 cores, with 16 partitions ingesting events of 10
// messages, a second slot for full batches alone was 7 % faster (median
// 36,488 → 39,131 msg/s), where a second slot for every batch was 12 %
// slower at one message an event: its batches shrank from about 800
// messages to 235–450 (BENCHMARKS.md, issue 13, twentieth session).
type commitSlots struct {
	any    chan struct{} // for every batch
	behind chan struct{} // for a batch of at least full messages; nil when n is 1
	full   int
}

func newCommitSlots(n, full int) *commitSlots {
	a := max(1, n/2)
	s := &commitSlots{any: make(chan struct{}, a), full: full}
	if n > a {
		s.behind = make(chan struct{}, n-a)
	}
	return s
}

// take waits for a slot for a batch of size messages (counted as BatchSize
// counts them) and returns the function that gives it back, which may be
// called more than once. waiting is set while it waits. It fails only when
// ctx ends first.
func (s *commitSlots) take(ctx context.Context, size int, waiting *atomic.Bool) (func(), error) {
	behind := s.behind
	if size < s.full {
		behind = nil // a nil channel never takes a send
	}
	slot, err := s.acquire(ctx, behind, waiting)
	if err != nil {
		return nil, err
	}
	return sync.OnceFunc(func() { <-slot }), nil
}

func (s *commitSlots) acquire(ctx context.Context, behind chan struct{}, waiting *atomic.Bool) (chan struct{}, error) {
	select {
	case s.any <- struct{}{}:
		return s.any, nil
	default:
	}
	select {
	case behind <- struct{}{}:
		return behind, nil
	default:
	}
	waiting.Store(true)
	defer waiting.Store(false)
	select {
	case s.any <- struct{}{}:
		return s.any, nil
	case behind <- struct{}{}:
		return behind, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
