package query

import (
	"fmt"
	"testing"
	"time"
)

func TestNamespaceLimiterBucket(t *testing.T) {
	l := newNamespaceLimiter(2, 2, 10) // 2 a second, bursts of 2
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 2 {
		if ok, _ := l.allow("a", t0); !ok {
			t.Fatalf("allow(a) #%d at t0 = false, want true within the burst", i+1)
		}
	}
	ok, wait := l.allow("a", t0)
	if ok || wait <= 0 || wait > 500*time.Millisecond {
		t.Fatalf("allow(a) #3 at t0 = %v, %v; want false with a wait in (0, 500ms]", ok, wait)
	}
	// A refusal takes no token: the next one is there after wait.
	if ok, _ := l.allow("a", t0.Add(wait)); !ok {
		t.Fatalf("allow(a) after %v = false, want true", wait)
	}
	// Namespaces do not share a bucket.
	if ok, _ := l.allow("b", t0); !ok {
		t.Fatal("allow(b) at t0 = false, want true: b has its own bucket")
	}
	if got := retrySeconds(wait); got != 1 {
		t.Fatalf("retrySeconds(%v)=%d, want 1 (rounded up, at least 1)", wait, got)
	}
	if got := retrySeconds(2500 * time.Millisecond); got != 3 {
		t.Fatalf("retrySeconds(2.5s)=%d, want 3", got)
	}
}

// TestNamespaceLimiterIsBounded: a flood of distinct namespaces keeps at
// most max buckets, dropping the least recently used.
func TestNamespaceLimiterIsBounded(t *testing.T) {
	const max = 8
	l := newNamespaceLimiter(1, 1, max)
	t0 := time.Unix(1_700_000_000, 0)
	l.allow("hot", t0) // empties hot's bucket
	for i := range 10_000 {
		l.allow(fmt.Sprintf("ns%d", i), t0)
		if i%4 == 0 { // fewer than max others between two uses
			l.allow("hot", t0) // hot stays recently used, so is kept
		}
		if n := l.len(); n > max {
			t.Fatalf("after %d namespaces the limiter holds %d buckets, want at most %d", i+1, n, max)
		}
	}
	if ok, _ := l.allow("hot", t0); ok {
		t.Fatal("allow(hot) = true, want false: a recently used bucket must survive the flood")
	}
	// ns0 was evicted long ago: it comes back with a full bucket.
	if ok, _ := l.allow("ns0", t0); !ok {
		t.Fatal("allow(ns0) = false, want true: an evicted namespace starts with a full bucket")
	}
	if l.len() != max {
		t.Fatalf("len()=%d, want %d", l.len(), max)
	}
}

func TestNamespaceLimiterOff(t *testing.T) {
	var l *namespaceLimiter = newNamespaceLimiter(0, 0, 0)
	if l != nil {
		t.Fatal("newNamespaceLimiter(0)=non-nil, want nil (no limit)")
	}
	for range 100 {
		if ok, _ := l.allow("a", time.Now()); !ok {
			t.Fatal("nil limiter refused a request")
		}
	}
}
