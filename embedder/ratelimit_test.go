package embedder

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rlHarness is a RateLimited on a fixed clock whose waits are recorded
// instead of slept.
type rlHarness struct {
	rl    *RateLimited
	calls atomic.Int32 // inner calls

	mu    sync.Mutex
	waits []time.Duration
}

func newRLHarness(t testing.TB, cfg RateLimitConfig, t0 time.Time) *rlHarness {
	t.Helper()
	h := &rlHarness{}
	inner := Func{Desc: Info{Provider: "fake", Dims: 2}, EmbedFunc: func(ctx context.Context, req Request) ([][]float32, error) {
		h.calls.Add(1)
		out := make([][]float32, len(req.Texts))
		for i := range out {
			out[i] = []float32{1, 0}
		}
		return out, nil
	}}
	h.rl = NewRateLimited(inner, cfg)
	h.rl.now = func() time.Time { return t0 }
	h.rl.wait = func(ctx context.Context, d time.Duration) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.waits = append(h.waits, d)
		return nil
	}
	return h
}

// embed calls Embed and returns the wait it recorded, or 0.
func (h *rlHarness) embed(t testing.TB, texts ...string) time.Duration {
	t.Helper()
	h.mu.Lock()
	before := len(h.waits)
	h.mu.Unlock()
	if _, err := h.rl.Embed(context.Background(), Request{Texts: texts}); err != nil {
		t.Fatalf("Embed() error %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch len(h.waits) - before {
	case 0:
		return 0
	case 1:
		return h.waits[before]
	}
	t.Fatalf("Embed() waited %d times", len(h.waits)-before)
	return 0
}

func approx(got, want time.Duration) bool {
	d := got - want
	return d > -time.Millisecond && d < time.Millisecond
}

func TestRateLimitedRequests(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := newRLHarness(t, RateLimitConfig{RequestsPerMinute: 60}, t0)
	for i := range 60 {
		if d := h.embed(t, "a"); d != 0 {
			t.Fatalf("call %d waited %v, want 0 (burst of 60)", i, d)
		}
	}
	if d := h.embed(t, "a"); !approx(d, time.Second) {
		t.Fatalf("call 61 waited %v, want 1s", d)
	}
	if d := h.embed(t, "a"); !approx(d, 2*time.Second) {
		t.Fatalf("call 62 waited %v, want 2s", d)
	}
	if got := h.calls.Load(); got != 62 {
		t.Fatalf("inner calls=%d, want 62", got)
	}
}

func TestRateLimitedTokens(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	text100 := strings.Repeat("abcd", 100) // 100 tokens
	tests := []struct {
		name  string
		cfg   RateLimitConfig
		texts [][]string
		want  []time.Duration // the wait of each call
	}{
		{
			name:  "burst then rate",
			cfg:   RateLimitConfig{TokensPerMinute: 600}, // 10 tokens/s
			texts: [][]string{{text100, text100}, {text100, text100}, {text100, text100}, {text100}},
			want:  []time.Duration{0, 0, 0, 10 * time.Second},
		},
		{
			name: "a request above the budget waits for a full bucket",
			cfg:  RateLimitConfig{TokensPerMinute: 60}, // 1 token/s
			texts: [][]string{
				{text100}, // 100 > 60: takes the full bucket at once
				{"a"},     // 1 token
				{text100}, // a full bucket again
			},
			want: []time.Duration{0, time.Second, 61 * time.Second},
		},
		{
			name:  "at least one token per text, and per request",
			cfg:   RateLimitConfig{TokensPerMinute: 60},
			texts: [][]string{make([]string, 30), make([]string, 30), nil, {""}},
			want:  []time.Duration{0, 0, time.Second, 2 * time.Second},
		},
		{
			name:  "tokens wait longer than requests",
			cfg:   RateLimitConfig{RequestsPerMinute: 2, TokensPerMinute: 600}, // 1/30s, 10 tokens/s
			texts: [][]string{{strings.Repeat(text100, 6)}, {strings.Repeat(text100, 6)}, {text100}},
			want:  []time.Duration{0, time.Minute, 70 * time.Second}, // requests alone: 0, 0, 30s
		},
		{
			name:  "requests wait longer than tokens",
			cfg:   RateLimitConfig{RequestsPerMinute: 2, TokensPerMinute: 600},
			texts: [][]string{{text100}, {text100}, {text100}, {text100}},
			want:  []time.Duration{0, 0, 30 * time.Second, time.Minute}, // tokens alone: all 0
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newRLHarness(t, tt.cfg, t0)
			for i, texts := range tt.texts {
				if got := h.embed(t, texts...); !approx(got, tt.want[i]) {
					t.Fatalf("call %d waited %v, want %v", i, got, tt.want[i])
				}
			}
		})
	}
}

func TestRateLimitedUnlimited(t *testing.T) {
	h := newRLHarness(t, RateLimitConfig{}, time.Now())
	for i := range 1000 {
		if d := h.embed(t, strings.Repeat("x", 10000)); d != 0 {
			t.Fatalf("call %d waited %v, want 0", i, d)
		}
	}
	if h.rl.requests != nil || h.rl.tokens != nil {
		t.Fatalf("unlimited config made limiters")
	}
}

// TestRateLimitedCancel checks that a caller waiting for the limit returns
// promptly when its context is cancelled, and gives its reservation back.
func TestRateLimitedCancel(t *testing.T) {
	t0 := time.Now()
	h := newRLHarness(t, RateLimitConfig{RequestsPerMinute: 1}, t0)
	if d := h.embed(t, "a"); d != 0 {
		t.Fatalf("first call waited %v, want 0", d)
	}

	waiting := make(chan time.Duration, 1)
	h.rl.wait = func(ctx context.Context, d time.Duration) error {
		waiting <- d
		return waitFor(ctx, d) // really wait: a minute, unless cancelled
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.rl.Embed(ctx, Request{Texts: []string{"a"}})
		done <- err
	}()
	if d := <-waiting; !approx(d, time.Minute) {
		t.Fatalf("second call waits %v, want 1m", d)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Embed() error %v, want %v", err, context.Canceled)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Embed() still waiting 10s after its context was cancelled")
	}
	if got := h.calls.Load(); got != 1 {
		t.Fatalf("inner calls=%d, want 1", got)
	}

	// The cancelled call gave its request back: the next waits one
	// interval, not two.
	h.rl.wait = func(ctx context.Context, d time.Duration) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.waits = append(h.waits, d)
		return nil
	}
	if d := h.embed(t, "a"); !approx(d, time.Minute) {
		t.Fatalf("call after the cancelled one waited %v, want 1m", d)
	}
}

func TestRateLimitedContextEnded(t *testing.T) {
	t0 := time.Now()
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled before the call", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"deadline before the wait ends", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), t0.Add(10*time.Second))
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newRLHarness(t, RateLimitConfig{RequestsPerMinute: 1}, t0)
			if d := h.embed(t, "a"); d != 0 {
				t.Fatalf("first call waited %v, want 0", d)
			}
			ctx, cancel := tt.ctx()
			defer cancel()
			if _, err := h.rl.Embed(ctx, Request{Texts: []string{"a"}}); !errors.Is(err, tt.want) {
				t.Fatalf("Embed() error %v, want %v", err, tt.want)
			}
			if len(h.waits) != 0 || h.calls.Load() != 1 {
				t.Fatalf("waits=%v inner calls=%d, want no wait and 1 call", h.waits, h.calls.Load())
			}
			// Nothing stayed reserved.
			if d := h.embed(t, "a"); !approx(d, time.Minute) {
				t.Fatalf("next call waited %v, want 1m", d)
			}
		})
	}
}

func TestRateLimitedConcurrent(t *testing.T) {
	h := newRLHarness(t, RateLimitConfig{RequestsPerMinute: 100, TokensPerMinute: 1000}, time.Now())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := h.rl.Embed(context.Background(), Request{Texts: []string{"abcdefgh"}}); err != nil {
					t.Errorf("Embed() error %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := h.calls.Load(); got != 400 {
		t.Fatalf("inner calls=%d, want 400", got)
	}
	// 400 requests at 100/min with a burst of 100: the last waits 3 minutes.
	var longest time.Duration
	for _, d := range h.waits {
		longest = max(longest, d)
	}
	if !approx(longest, 3*time.Minute) {
		t.Fatalf("longest wait %v, want 3m", longest)
	}
}

func TestRateLimitedInfo(t *testing.T) {
	want := Info{Provider: "fake", Model: "m", Dims: 8}
	r := NewRateLimited(Func{Desc: want}, RateLimitConfig{RequestsPerMinute: 1})
	if got := r.Info(); got != want {
		t.Fatalf("Info()=%+v, want %+v", got, want)
	}
}

func TestRateLimitConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  RateLimitConfig
		ok   bool
	}{
		{"zero is unlimited", RateLimitConfig{}, true},
		{"set", RateLimitConfig{RequestsPerMinute: 3000, TokensPerMinute: 1_000_000}, true},
		{"negative requests", RateLimitConfig{RequestsPerMinute: -1}, false},
		{"negative tokens", RateLimitConfig{TokensPerMinute: -1}, false},
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
}
