package embedder

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
)

// RateLimitConfig bounds how fast a RateLimited calls its inner embedder,
// to stay within a provider's published limits. The zero value is
// unlimited.
type RateLimitConfig struct {
	// RequestsPerMinute is the most inner calls per minute, with bursts of
	// up to that many at once; 0 means unlimited.
	RequestsPerMinute int
	// TokensPerMinute is the most estimated input tokens per minute, with
	// bursts of up to that many; 0 means unlimited.
	TokensPerMinute int
}

// Validate reports whether c is usable; the error wraps ErrInvalidConfig.
func (c RateLimitConfig) Validate() error {
	if c.RequestsPerMinute < 0 {
		return fmt.Errorf("requests per minute %d is negative: %w", c.RequestsPerMinute, ErrInvalidConfig)
	}
	if c.TokensPerMinute < 0 {
		return fmt.Errorf("tokens per minute %d is negative: %w", c.TokensPerMinute, ErrInvalidConfig)
	}
	return nil
}

// RateLimited is an Embedder that waits, before each inner call, for one
// request and for the estimated tokens of the request's texts (about one
// per 4 bytes, at least one per text) from token buckets that refill at
// the configured per-minute rates. A request estimated larger than
// TokensPerMinute waits for a full token bucket instead of failing.
//
// Each Embed is one inner call: put RateLimited under Batched, with a
// BatchSize within the provider's request limits, so that one inner call is
// one request to the provider. A RateLimited is safe for concurrent use and
// shares its budget among all callers.
type RateLimited struct {
	inner    Embedder
	requests *rate.Limiter // nil means unlimited
	tokens   *rate.Limiter // nil means unlimited

	now  func() time.Time                                 // the clock; tests replace it
	wait func(ctx context.Context, d time.Duration) error // waits d; tests replace it
}

var _ Embedder = (*RateLimited)(nil)

// NewRateLimited wraps inner. Zero or negative fields of cfg mean
// unlimited; call cfg.Validate first to reject bad configuration instead.
func NewRateLimited(inner Embedder, cfg RateLimitConfig) *RateLimited {
	return &RateLimited{
		inner:    inner,
		requests: perMinute(cfg.RequestsPerMinute),
		tokens:   perMinute(cfg.TokensPerMinute),
		now:      time.Now,
		wait:     waitFor,
	}
}

// perMinute returns a limiter of n per minute with a burst of n, or nil for
// n <= 0.
func perMinute(n int) *rate.Limiter {
	if n <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(float64(n)/60), n)
}

// Info returns the inner embedder's Info: rate limiting does not change
// vectors.
func (r *RateLimited) Info() Info { return r.inner.Info() }

// Embed waits for its share of the rate limits, then calls the inner
// embedder. When ctx ends first, or its deadline is before the wait would
// end, it returns at once with an error wrapping the context's error and
// gives back what it had reserved.
func (r *RateLimited) Embed(ctx context.Context, req Request) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, r.ctxError(err)
	}
	now := r.now()
	delay, cancel := r.reserve(now, requestTokens(req.Texts))
	if delay > 0 {
		if dl, ok := ctx.Deadline(); ok && dl.Sub(now) < delay {
			cancel()
			return nil, r.ctxError(fmt.Errorf("rate limit wait %v is past the deadline: %w",
				delay.Round(time.Millisecond), context.DeadlineExceeded))
		}
		if err := r.wait(ctx, delay); err != nil {
			cancel()
			return nil, r.ctxError(err)
		}
	}
	return r.inner.Embed(ctx, req)
}

// reserve takes one request and n tokens at now. It returns how long the
// caller must wait before using them, and a func that gives them back.
func (r *RateLimited) reserve(now time.Time, n int) (time.Duration, func()) {
	var delay time.Duration
	var held []*rate.Reservation
	for _, l := range []struct {
		lim *rate.Limiter
		n   int
	}{{r.requests, 1}, {r.tokens, n}} {
		if l.lim == nil {
			continue
		}
		// A request above the burst could never be served: wait for a
		// full bucket instead.
		res := l.lim.ReserveN(now, min(l.n, l.lim.Burst()))
		held = append(held, res)
		delay = max(delay, res.DelayFrom(now))
	}
	return delay, func() {
		at := r.now()
		for _, res := range held {
			res.CancelAt(at)
		}
	}
}

func (r *RateLimited) ctxError(err error) error {
	return fmt.Errorf("%s: wait for rate limit: %w", r.inner.Info().Provider, err)
}

// requestTokens estimates the tokens of texts: estimateTokens of each, and
// at least one per text.
func requestTokens(texts []string) int {
	n := 0
	for _, t := range texts {
		n += max(1, estimateTokens(t))
	}
	return max(n, 1)
}

// waitFor waits d, or until ctx ends.
func waitFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
