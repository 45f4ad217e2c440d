package embedder

import (
	"context"
	"errors"
	"fmt"
	"time"

	"memindex/internal/circuit"
)

// Defaults of BreakerConfig.
const (
	defaultBreakerFailures = 5
	defaultBreakerCooldown = 30 * time.Second
)

// States of a Breaker, as reported in BreakerState.State.
const (
	// BreakerClosed lets every call through and counts consecutive failures.
	BreakerClosed = string(circuit.Closed)
	// BreakerOpen fails every call at once until the cool-down ends.
	BreakerOpen = string(circuit.Open)
	// BreakerHalfOpen lets one probe call through; others fail at once.
	BreakerHalfOpen = string(circuit.HalfOpen)
)

// BreakerConfig configures a Breaker. The zero value takes the defaults.
type BreakerConfig struct {
	// Failures is how many consecutive failed calls open the breaker;
	// 0 means 5.
	Failures int
	// Cooldown is how long the breaker stays open before it lets one call
	// through as a half-open probe; 0 means 30s.
	Cooldown time.Duration
}

// Validate reports whether c is usable; the error wraps ErrInvalidConfig.
// Zero fields take their defaults.
func (c BreakerConfig) Validate() error {
	if c.Failures < 0 {
		return fmt.Errorf("breaker failures %d is negative: %w", c.Failures, ErrInvalidConfig)
	}
	if c.Cooldown < 0 {
		return fmt.Errorf("breaker cooldown %v is negative: %w", c.Cooldown, ErrInvalidConfig)
	}
	return nil
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.Failures <= 0 {
		c.Failures = defaultBreakerFailures
	}
	if c.Cooldown <= 0 {
		c.Cooldown = defaultBreakerCooldown
	}
	return c
}

// BreakerState is a snapshot of a Breaker, for health checks and metrics.
type BreakerState struct {
	// State is BreakerClosed, BreakerOpen or BreakerHalfOpen. An open
	// breaker whose OpenUntil has passed stays "open" until the next call,
	// which it lets through as the probe.
	State string
	// Failures is the number of consecutive failed calls since the last
	// success, probes included.
	Failures int
	// OpenUntil is when an open breaker lets a probe through; it is zero
	// while the breaker is closed.
	OpenUntil time.Time
	// Opens counts how many times the breaker has opened (or re-opened
	// after a failed probe) since it was made.
	Opens uint64
}

// Breaker is an Embedder that stops calling a failing inner embedder for a
// while: a circuit breaker (the state machine is internal/circuit's, shared
// with the client's fallback). It is closed at first and lets every call
// through. Failures consecutive failed calls open it: for Cooldown it fails
// every call at once with an error wrapping ErrBreakerOpen. Then it lets one
// call through as a half-open probe, failing the others at once meanwhile:
// a probe that succeeds closes the breaker, one that fails opens it for
// another Cooldown.
//
// A call fails, for the breaker, when the inner embedder returns an error
// that does not match ErrPermanent while the caller's context is still
// live. An ErrPermanent error (a rejected key, a bad request) is returned
// as is and counts as an answer, like a success: the provider is up. An
// error returned after the caller's context ended (cancelled or past its
// deadline) counts as neither, so an impatient caller cannot open the
// breaker for everyone; the provider's own per-request timeout (see
// HTTPConfig.Timeout) is what reports a provider that hangs.
//
// A Breaker is safe for concurrent use. Put it outside Batched, so that one
// Embed is one outcome, or inside it, to judge each batch.
type Breaker struct {
	inner Embedder
	cb    *circuit.Breaker
	now   func() time.Time // the clock; tests replace it before the first call
}

var _ Embedder = (*Breaker)(nil)

// NewBreaker wraps inner in a closed breaker. Zero or negative fields of
// cfg take their defaults; call cfg.Validate first to reject bad
// configuration instead.
func NewBreaker(inner Embedder, cfg BreakerConfig) *Breaker {
	cfg = cfg.withDefaults()
	b := &Breaker{inner: inner, now: time.Now}
	b.cb = circuit.New(circuit.Config{Failures: cfg.Failures, Cooldown: cfg.Cooldown, Now: func() time.Time { return b.now() }})
	return b
}

// Info returns the inner embedder's Info: the breaker does not change
// vectors.
func (b *Breaker) Info() Info { return b.inner.Info() }

// State returns a snapshot of the breaker.
func (b *Breaker) State() BreakerState {
	s := b.cb.Snapshot()
	return BreakerState{State: string(s.State), Failures: s.Failures, OpenUntil: s.OpenUntil, Opens: s.Opens}
}

// Embed calls the inner embedder unless the breaker is open, or half-open
// with its probe in flight; then it fails at once with an error wrapping
// ErrBreakerOpen that says until when. A context that has already ended
// fails at once with its error, without touching the breaker.
func (b *Breaker) Embed(ctx context.Context, req Request) ([][]float32, error) {
	provider := b.inner.Info().Provider
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", provider, err)
	}
	call, s, ok := b.cb.Allow()
	if !ok {
		if s.State == circuit.HalfOpen {
			return nil, fmt.Errorf("%s: circuit breaker half-open, open until its probe answers: %w", provider, ErrBreakerOpen)
		}
		return nil, fmt.Errorf("%s: circuit breaker open until %s after %d consecutive failures: %w",
			provider, s.OpenUntil.Format(time.RFC3339), s.Failures, ErrBreakerOpen)
	}
	vecs, err := b.inner.Embed(ctx, req)
	switch {
	case err == nil || errors.Is(err, ErrPermanent):
		call.Success() // an answer, possibly a permanent error: the provider is up
	case ctx.Err() != nil:
		call.Release() // the caller gave up; says nothing
	default:
		call.Failure(err)
	}
	return vecs, err
}
