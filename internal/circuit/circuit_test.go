package circuit

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"memindex/internal/clocktest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestBreakerSequences walks a Breaker through its states: each step
// advances the clock, asks Allow, ends the call with an outcome (or leaves
// it in flight) and compares the snapshot with the one wanted.
func TestBreakerSequences(t *testing.T) {
	const cooldown = time.Minute
	errDown := errors.New("down")
	type step struct {
		advance time.Duration
		wantOK  bool
		outcome string // "ok", "fail", "release" or "" (in flight, or refused)
		want    Snapshot
	}
	until := func(d time.Duration) time.Time { return t0.Add(d) }
	cases := []struct {
		name     string
		failures int
		steps    []step
	}{
		{"stays closed on success", 3, []step{
			{0, true, "ok", Snapshot{State: Closed}},
			{time.Hour, true, "ok", Snapshot{State: Closed}},
		}},
		{"opens after N consecutive failures and refuses until the cool-down", 3, []step{
			{0, true, "fail", Snapshot{State: Closed, Failures: 1, LastErr: "down"}},
			{1, true, "fail", Snapshot{State: Closed, Failures: 2, LastErr: "down"}},
			{1, true, "fail", Snapshot{State: Open, Failures: 3, OpenUntil: until(2 + cooldown), Opens: 1, LastErr: "down"}},
			{cooldown - 1, false, "", Snapshot{State: Open, Failures: 3, OpenUntil: until(2 + cooldown), Opens: 1, LastErr: "down"}},
		}},
		{"a success resets the count", 2, []step{
			{0, true, "fail", Snapshot{State: Closed, Failures: 1, LastErr: "down"}},
			{0, true, "ok", Snapshot{State: Closed}},
			{0, true, "fail", Snapshot{State: Closed, Failures: 1, LastErr: "down"}},
		}},
		{"a release does not count nor reset", 2, []step{
			{0, true, "fail", Snapshot{State: Closed, Failures: 1, LastErr: "down"}},
			{0, true, "release", Snapshot{State: Closed, Failures: 1, LastErr: "down"}},
			{0, true, "fail", Snapshot{State: Open, Failures: 2, OpenUntil: until(cooldown), Opens: 1, LastErr: "down"}},
		}},
		{"exactly the cool-down: the probe goes, its success closes", 1, []step{
			{0, true, "fail", Snapshot{State: Open, Failures: 1, OpenUntil: until(cooldown), Opens: 1, LastErr: "down"}},
			{cooldown, true, "ok", Snapshot{State: Closed, Opens: 1}},
			{0, true, "fail", Snapshot{State: Open, Failures: 1, OpenUntil: until(cooldown + cooldown), Opens: 2, LastErr: "down"}},
		}},
		{"a failed probe re-opens for another cool-down, whatever the count", 3, []step{
			{0, true, "fail", Snapshot{State: Closed, Failures: 1, LastErr: "down"}},
			{0, true, "fail", Snapshot{State: Closed, Failures: 2, LastErr: "down"}},
			{0, true, "fail", Snapshot{State: Open, Failures: 3, OpenUntil: until(cooldown), Opens: 1, LastErr: "down"}},
			{cooldown + 5, true, "fail", Snapshot{State: Open, Failures: 4, OpenUntil: until(2*cooldown + 5), Opens: 2, LastErr: "down"}},
			{cooldown - 1, false, "", Snapshot{State: Open, Failures: 4, OpenUntil: until(2*cooldown + 5), Opens: 2, LastErr: "down"}},
			{1, true, "ok", Snapshot{State: Closed, Opens: 2}},
		}},
		{"one probe at a time", 1, []step{
			{0, true, "fail", Snapshot{State: Open, Failures: 1, OpenUntil: until(cooldown), Opens: 1, LastErr: "down"}},
			{cooldown, true, "", Snapshot{State: HalfOpen, Failures: 1, OpenUntil: until(cooldown), Opens: 1, LastErr: "down", Probing: true}},
			{0, false, "", Snapshot{State: HalfOpen, Failures: 1, OpenUntil: until(cooldown), Opens: 1, LastErr: "down", Probing: true}},
			{time.Hour, false, "", Snapshot{State: HalfOpen, Failures: 1, OpenUntil: until(cooldown), Opens: 1, LastErr: "down", Probing: true}},
		}},
		{"a released probe lets the next call probe", 1, []step{
			{0, true, "fail", Snapshot{State: Open, Failures: 1, OpenUntil: until(cooldown), Opens: 1, LastErr: "down"}},
			{cooldown, true, "release", Snapshot{State: HalfOpen, Failures: 1, OpenUntil: until(cooldown), Opens: 1, LastErr: "down"}},
			{1, true, "ok", Snapshot{State: Closed, Opens: 1}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktest.New(t0)
			b := New(Config{Failures: tc.failures, Cooldown: cooldown, Now: clk.Now})
			for i, s := range tc.steps {
				clk.Advance(s.advance)
				c, _, ok := b.Allow()
				if ok != s.wantOK {
					t.Fatalf("step %d: Allow() ok=%t, want %t", i, ok, s.wantOK)
				}
				switch s.outcome {
				case "ok":
					c.Success()
				case "fail":
					c.Failure(errDown)
				case "release":
					c.Release()
				}
				if got := b.Snapshot(); got != s.want {
					t.Fatalf("step %d: Snapshot()=%+v, want %+v", i, got, s.want)
				}
			}
		})
	}
}

// TestRefusalSaysWhy: a refused Allow returns the snapshot that explains
// it, with the time the probe may go.
func TestRefusalSaysWhy(t *testing.T) {
	clk := clocktest.New(t0)
	b := New(Config{Failures: 1, Cooldown: time.Second, Now: clk.Now})
	c, _, _ := b.Allow()
	c.Failure(errors.New("boom"))
	if _, s, ok := b.Allow(); ok || s.State != Open || !s.OpenUntil.Equal(t0.Add(time.Second)) || s.LastErr != "boom" {
		t.Fatalf("Allow() while open = %+v, %t; want refused, open until t0+1s after boom", s, ok)
	}
	clk.Advance(time.Second)
	probe, _, ok := b.Allow()
	if !ok {
		t.Fatal("Allow() after the cool-down refused the probe")
	}
	if _, s, ok := b.Allow(); ok || s.State != HalfOpen || !s.Probing {
		t.Fatalf("Allow() during the probe = %+v, %t; want refused, half-open with a probe in flight", s, ok)
	}
	probe.Success()
}

// TestStaleOutcomesAreIgnored: a call that began before the breaker
// changed state does not move it, and a Call ended twice counts once.
func TestStaleOutcomesAreIgnored(t *testing.T) {
	clk := clocktest.New(t0)
	b := New(Config{Failures: 2, Cooldown: time.Minute, Now: clk.Now})
	slow, _, _ := b.Allow() // begun while closed
	for range 2 {
		c, _, _ := b.Allow()
		c.Failure(errors.New("down"))
	}
	slow.Success() // the breaker opened meanwhile: this says nothing now
	if s := b.Snapshot(); s.State != Open || s.Failures != 2 {
		t.Fatalf("after a stale success: %+v, want open after 2 failures", s)
	}
	clk.Advance(time.Minute)
	probe, _, _ := b.Allow()
	probe.Release()
	probe.Failure(errors.New("again")) // already ended
	if s := b.Snapshot(); s.State != HalfOpen || s.Probing || s.Opens != 1 {
		t.Fatalf("after a released probe ended again: %+v, want half-open, no probe, opened once", s)
	}
	var zero Call
	zero.Success() // the zero Call does nothing
}

// TestOneProbeConcurrently: while the probe is in flight, every other
// caller is refused; for the race detector too.
func TestOneProbeConcurrently(t *testing.T) {
	clk := clocktest.New(t0)
	b := New(Config{Failures: 1, Cooldown: time.Second, Now: clk.Now})
	c, _, _ := b.Allow()
	c.Failure(errors.New("down"))
	clk.Advance(time.Second)
	var allowed atomic.Int32
	var wg sync.WaitGroup
	calls := make(chan Call, 32)
	for range 32 {
		wg.Go(func() {
			if c, _, ok := b.Allow(); ok {
				allowed.Add(1)
				calls <- c
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 1 {
		t.Fatalf("%d of 32 concurrent calls were let through half-open, want 1", n)
	}
	probe := <-calls
	probe.Success()
	if s := b.Snapshot(); s.State != Closed {
		t.Fatalf("after the probe's success: %+v, want closed", s)
	}
}

// TestConcurrent hammers a Breaker from many goroutines while the clock
// moves, for the race detector.
func TestConcurrent(t *testing.T) {
	clk := clocktest.New(t0)
	b := New(Config{Failures: 2, Cooldown: time.Second, Now: clk.Now})
	var n atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				if g == 0 && i%10 == 0 {
					clk.Advance(300 * time.Millisecond)
				}
				c, s, ok := b.Allow()
				if !ok {
					if s.State == Closed {
						t.Errorf("refused while closed: %+v", s)
						return
					}
					continue
				}
				switch k := n.Add(1); {
				case k%7 == 0:
					c.Release()
				case k%3 == 0:
					c.Success()
				default:
					c.Failure(errors.New("down"))
				}
			}
		})
	}
	wg.Wait()
	if b.Snapshot().Opens == 0 {
		t.Fatal("the breaker never opened")
	}
}
