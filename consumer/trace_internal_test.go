package consumer

import (
	"context"
	"errors"
	"testing"
)

// TestTracingOffAllocatesNothing guards the promise that tracing, when off,
// costs the ingest path no allocation: the calls process and commit make
// per batch and per message are nil checks.
func TestTracingOffAllocatesNothing(t *testing.T) {
	off := newTracing(nil)
	ctx := context.Background()
	err := errors.New("x")
	allocs := testing.AllocsPerRun(100, func() {
		bt := off.begin(ctx, 3, "memindex-p3", 100)
		_ = bt.context(ctx)
		for range 100 {
			_ = bt.message(ctx, nil, 7, OutcomeIndexed, "")
		}
		endSpan(bt.start(SpanChunk), nil)
		endSpan(bt.startEmbed(10), err)
		bt.end(nil)
	})
	if allocs != 0 {
		t.Fatalf("tracing off: %v allocations per batch, want 0", allocs)
	}
}
