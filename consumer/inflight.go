package consumer

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/semaphore"
)

// inflight bounds the event payload that the batches of all a worker's
// partitions hold at once, being collected, prepared or committed
// (Config.InflightBytes). A batch holds what it took until it is committed
// or dropped. Each partition may hold two batches of up to MaxBatchBytes,
// and a batch's heap is several times its payload once chunked and
// embedded. With 8 partitions ingesting 900 KiB memory files together,
// a worker under --memory-limit 1GiB peaked at 1,052–1,056 MiB RSS
// without it and 871–877 MiB with it (BENCHMARKS.md).
//
// A batch that cannot take the next event's bytes at once ends there and
// the event opens the next batch, which waits for them: so a partition
// never holds budget while it waits for more, and the batches that hold
// budget always go on to commit and give it back. The waiters are served
// in order, and a batch being collected takes no more while one waits.
// One event larger than the whole bound takes all of it.
type inflight struct {
	sem *semaphore.Weighted // nil: no bound
	max int64
}

func newInflight(max int64) inflight {
	if max <= 0 {
		return inflight{}
	}
	return inflight{sem: semaphore.NewWeighted(max), max: max}
}

// weight is what an event of n payload bytes takes.
func (f inflight) weight(n int) int64 { return min(int64(n), f.max) }

// tryTake takes n bytes if they are free now and nobody waits.
func (f inflight) tryTake(n int) (int64, bool) {
	if f.sem == nil {
		return 0, true
	}
	w := f.weight(n)
	return w, f.sem.TryAcquire(w)
}

// take waits for n bytes, with waiting set meanwhile and InProgress
// heartbeats for m every interval so that waiting does not trigger its
// redelivery; false when ctx ended first.
func (f inflight) take(ctx context.Context, n int, m jetstream.Msg, every time.Duration, waiting *atomic.Bool) (int64, bool) {
	if f.sem == nil {
		return 0, true
	}
	w := f.weight(n)
	if f.sem.TryAcquire(w) {
		return w, true
	}
	waiting.Store(true)
	defer waiting.Store(false)
	for {
		actx, cancel := context.WithTimeout(ctx, every)
		err := f.sem.Acquire(actx, w)
		cancel()
		if err == nil {
			return w, true
		}
		if ctx.Err() != nil {
			return 0, false
		}
		_ = m.InProgress()
	}
}

// give returns n bytes taken.
func (f inflight) give(n int64) {
	if f.sem != nil && n > 0 {
		f.sem.Release(n)
	}
}
