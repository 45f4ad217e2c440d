package embedder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"memindex/internal/clocktest"
)

// errCallerCancel, as a scripted result, makes the fake inner embedder
// cancel the caller's context and return its error.
var errCallerCancel = errors.New("caller cancels")

var (
	errBreakerUnavailable = &ProviderError{Provider: "fake", Status: 503, Message: "unavailable"}
	errBreakerKey         = &ProviderError{Provider: "fake", Status: 401, Message: "bad key", Permanent: true}
)

// breakerStep is one call through a Breaker: at t0+at, the inner embedder
// (if called) returns result.
type breakerStep struct {
	at         time.Duration
	result     error
	wantCalled bool
	wantErr    error // errors.Is target; nil means success
	wantState  string
	wantFails  int
	wantOpens  uint64
	wantUntil  time.Duration // OpenUntil - t0; 0 means the zero time
}

func TestBreakerSequences(t *testing.T) {
	const cooldown = 30 * time.Second
	fail := func(at time.Duration, fails int) breakerStep {
		return breakerStep{at: at, result: errBreakerUnavailable, wantCalled: true, wantErr: errBreakerUnavailable, wantState: BreakerClosed, wantFails: fails}
	}
	ok := func(at time.Duration) breakerStep {
		return breakerStep{at: at, wantCalled: true, wantState: BreakerClosed}
	}
	perm := func(at time.Duration) breakerStep {
		return breakerStep{at: at, result: errBreakerKey, wantCalled: true, wantErr: ErrPermanent, wantState: BreakerClosed}
	}
	// openAt is the third failure at at: it opens the breaker.
	openAt := func(at time.Duration, opens uint64) breakerStep {
		return breakerStep{at: at, result: errBreakerUnavailable, wantCalled: true, wantErr: errBreakerUnavailable,
			wantState: BreakerOpen, wantFails: 3, wantOpens: opens, wantUntil: at + cooldown}
	}
	fastFail := func(at time.Duration, fails int, opens uint64, until time.Duration) breakerStep {
		return breakerStep{at: at, wantErr: ErrBreakerOpen, wantState: BreakerOpen, wantFails: fails, wantOpens: opens, wantUntil: until}
	}
	tests := []struct {
		name  string
		steps []breakerStep
	}{
		{"stays closed on success", []breakerStep{ok(0), ok(1), ok(2)}},
		{"opens after N consecutive failures", []breakerStep{
			fail(0, 1), fail(1, 2), openAt(2, 1),
		}},
		{"fails fast while open without calling inner", []breakerStep{
			fail(0, 1), fail(0, 2), openAt(0, 1),
			fastFail(1*time.Second, 3, 1, cooldown),
			fastFail(cooldown-time.Nanosecond, 3, 1, cooldown),
		}},
		{"success resets the count", []breakerStep{
			fail(0, 1), fail(1, 2), ok(2), fail(3, 1), fail(4, 2), ok(5),
		}},
		{"permanent errors do not count", []breakerStep{
			fail(0, 1), fail(1, 2), perm(2), fail(3, 1), fail(4, 2), perm(5), perm(6), perm(7), perm(8),
		}},
		{"caller cancellation does not count", []breakerStep{
			fail(0, 1), fail(1, 2),
			{at: 2, result: errCallerCancel, wantCalled: true, wantErr: context.Canceled, wantState: BreakerClosed, wantFails: 2},
			{at: 3, result: errCallerCancel, wantCalled: true, wantErr: context.Canceled, wantState: BreakerClosed, wantFails: 2},
			openAt(4, 1),
		}},
		{"probe success closes", []breakerStep{
			fail(0, 1), fail(0, 2), openAt(0, 1),
			fastFail(cooldown-1, 3, 1, cooldown),
			{at: cooldown, wantCalled: true, wantState: BreakerClosed, wantOpens: 1},
			{at: cooldown + 1, result: errBreakerUnavailable, wantCalled: true, wantErr: errBreakerUnavailable,
				wantState: BreakerClosed, wantFails: 1, wantOpens: 1},
		}},
		{"permanent error on probe closes", []breakerStep{
			fail(0, 1), fail(0, 2), openAt(0, 1),
			{at: cooldown, result: errBreakerKey, wantCalled: true, wantErr: ErrPermanent, wantState: BreakerClosed, wantOpens: 1},
		}},
		{"probe failure re-opens for another cooldown", []breakerStep{
			fail(0, 1), fail(0, 2), openAt(0, 1),
			{at: cooldown + 5, result: errBreakerUnavailable, wantCalled: true, wantErr: errBreakerUnavailable,
				wantState: BreakerOpen, wantFails: 4, wantOpens: 2, wantUntil: 2*cooldown + 5},
			fastFail(cooldown+6, 4, 2, 2*cooldown+5),
			fastFail(2*cooldown+4, 4, 2, 2*cooldown+5),
			{at: 2*cooldown + 5, wantCalled: true, wantState: BreakerClosed, wantOpens: 2},
		}},
		{"cancelled probe leaves it half-open for the next caller", []breakerStep{
			fail(0, 1), fail(0, 2), openAt(0, 1),
			{at: cooldown, result: errCallerCancel, wantCalled: true, wantErr: context.Canceled,
				wantState: BreakerHalfOpen, wantFails: 3, wantOpens: 1, wantUntil: cooldown},
			{at: cooldown + 1, wantCalled: true, wantState: BreakerClosed, wantOpens: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			clock := clocktest.New(t0)
			var (
				result error
				called bool
				cancel context.CancelFunc
			)
			inner := Func{Desc: Info{Provider: "fake", Dims: 2}, EmbedFunc: func(ctx context.Context, req Request) ([][]float32, error) {
				called = true
				switch result {
				case nil:
					return [][]float32{{1, 0}}, nil
				case errCallerCancel:
					cancel()
					return nil, fmt.Errorf("fake: %w", ctx.Err())
				}
				return nil, result
			}}
			b := NewBreaker(inner, BreakerConfig{Failures: 3, Cooldown: cooldown})
			b.now = clock.Now
			for i, s := range tt.steps {
				clock.Set(t0.Add(s.at))
				result, called = s.result, false
				var ctx context.Context
				ctx, cancel = context.WithCancel(context.Background())
				vecs, err := b.Embed(ctx, Request{Texts: []string{"a"}})
				cancel()
				if called != s.wantCalled {
					t.Fatalf("step %d: inner called=%v, want %v", i, called, s.wantCalled)
				}
				if s.wantErr == nil {
					if err != nil || len(vecs) != 1 {
						t.Fatalf("step %d: Embed()=%v, %v; want 1 vector", i, vecs, err)
					}
				} else if !errors.Is(err, s.wantErr) {
					t.Fatalf("step %d: Embed() error %v, want %v", i, err, s.wantErr)
				}
				var wantUntil time.Time
				if s.wantUntil != 0 {
					wantUntil = t0.Add(s.wantUntil)
				}
				want := BreakerState{State: s.wantState, Failures: s.wantFails, OpenUntil: wantUntil, Opens: s.wantOpens}
				if got := b.State(); got != want {
					t.Fatalf("step %d: State()=%+v, want %+v", i, got, want)
				}
				if errors.Is(err, ErrBreakerOpen) && !strings.Contains(err.Error(), wantUntil.Format(time.RFC3339)) {
					t.Fatalf("step %d: error %q does not say until %v", i, err, wantUntil)
				}
			}
		})
	}
}

// TestBreakerOneProbe checks that while the half-open probe is in flight
// every other caller fails fast, and that the probe's success closes it.
func TestBreakerOneProbe(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := clocktest.New(t0)
	var calls atomic.Int32
	var failing atomic.Bool
	failing.Store(true)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	inner := Func{Desc: Info{Provider: "fake", Dims: 2}, EmbedFunc: func(ctx context.Context, req Request) ([][]float32, error) {
		calls.Add(1)
		if failing.Load() {
			return nil, errBreakerUnavailable
		}
		entered <- struct{}{}
		<-release
		return [][]float32{{1, 0}}, nil
	}}
	b := NewBreaker(inner, BreakerConfig{Failures: 2, Cooldown: time.Minute})
	b.now = clock.Now
	ctx := context.Background()
	req := Request{Texts: []string{"a"}}
	for range 2 {
		if _, err := b.Embed(ctx, req); !errors.Is(err, errBreakerUnavailable) {
			t.Fatalf("Embed() error %v, want %v", err, errBreakerUnavailable)
		}
	}
	if got := b.State().State; got != BreakerOpen {
		t.Fatalf("State=%q, want %q", got, BreakerOpen)
	}

	failing.Store(false)
	clock.Set(t0.Add(time.Minute))
	probeDone := make(chan error, 1)
	go func() {
		_, err := b.Embed(ctx, req)
		probeDone <- err
	}()
	<-entered // the probe is in the inner embedder

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			_, err := b.Embed(ctx, req)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrBreakerOpen) {
			t.Fatalf("Embed() during the probe: error %v, want %v", err, ErrBreakerOpen)
		}
	}
	if got := calls.Load(); got != 3 {
		t.Fatalf("inner calls=%d, want 3 (2 failures and the probe)", got)
	}
	if got := b.State().State; got != BreakerHalfOpen {
		t.Fatalf("State during the probe=%q, want %q", got, BreakerHalfOpen)
	}

	close(release)
	if err := <-probeDone; err != nil {
		t.Fatalf("probe Embed() error %v", err)
	}
	want := BreakerState{State: BreakerClosed, Opens: 1}
	if got := b.State(); got != want {
		t.Fatalf("State()=%+v, want %+v", got, want)
	}
	if _, err := b.Embed(ctx, req); err != nil {
		t.Fatalf("Embed() after close: %v", err)
	}
}

// TestBreakerConcurrent hammers a Breaker from many goroutines while the
// clock moves, for the race detector, and checks every error is either the
// inner one or ErrBreakerOpen.
func TestBreakerConcurrent(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := clocktest.New(t0)
	var n atomic.Int64
	inner := Func{Desc: Info{Provider: "fake", Dims: 2}, EmbedFunc: func(ctx context.Context, req Request) ([][]float32, error) {
		if n.Add(1)%3 != 0 {
			return nil, errBreakerUnavailable
		}
		return [][]float32{{1, 0}}, nil
	}}
	b := NewBreaker(inner, BreakerConfig{Failures: 2, Cooldown: time.Second})
	b.now = clock.Now
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				if g == 0 && i%10 == 0 {
					clock.Advance(300 * time.Millisecond)
				}
				_, err := b.Embed(context.Background(), Request{Texts: []string{"a"}})
				if err != nil && !errors.Is(err, ErrBreakerOpen) && !errors.Is(err, errBreakerUnavailable) {
					t.Errorf("Embed() error %v", err)
					return
				}
				switch s := b.State(); s.State {
				case BreakerClosed, BreakerOpen, BreakerHalfOpen:
				default:
					t.Errorf("State()=%+v", s)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.State().Opens == 0 {
		t.Fatalf("breaker never opened")
	}
}

func TestBreakerContextEndedBeforeCall(t *testing.T) {
	var called bool
	inner := Func{EmbedFunc: func(ctx context.Context, req Request) ([][]float32, error) {
		called = true
		return nil, nil
	}}
	b := NewBreaker(inner, BreakerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Embed(ctx, Request{Texts: []string{"a"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Embed() error %v, want %v", err, context.Canceled)
	}
	if called {
		t.Fatalf("inner called with an ended context")
	}
}

func TestBreakerInfo(t *testing.T) {
	want := Info{Provider: "fake", Model: "m", Dims: 8}
	b := NewBreaker(Func{Desc: want}, BreakerConfig{})
	if got := b.Info(); got != want {
		t.Fatalf("Info()=%+v, want %+v", got, want)
	}
}

func TestBreakerConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  BreakerConfig
		ok   bool
	}{
		{"zero takes defaults", BreakerConfig{}, true},
		{"set", BreakerConfig{Failures: 3, Cooldown: time.Second}, true},
		{"negative failures", BreakerConfig{Failures: -1}, false},
		{"negative cooldown", BreakerConfig{Cooldown: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate()=%v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate()=%v, want %v", err, ErrInvalidConfig)
			}
		})
	}
	got := BreakerConfig{}.withDefaults()
	if want := (BreakerConfig{Failures: 5, Cooldown: 30 * time.Second}); got != want {
		t.Fatalf("withDefaults()=%+v, want %+v", got, want)
	}
}
