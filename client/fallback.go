package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"memindex"
	"memindex/internal/circuit"
)

// Breaker defaults.
const (
	DefaultBreakerFailures = 3
	DefaultBreakerCoolDown = 30 * time.Second
	DefaultPrimaryTimeout  = 3 * time.Second
)

// BreakerConfig tunes the circuit breaker of a fallback wrapper. Zero
// fields take the defaults.
type BreakerConfig struct {
	// Failures is how many consecutive primary failures open the breaker
	// (default DefaultBreakerFailures).
	Failures int `json:"failures,omitempty"`
	// CoolDown is how long an open breaker sends everything to the fallback
	// before one call probes the primary again (default
	// DefaultBreakerCoolDown).
	CoolDown time.Duration `json:"coolDown,omitempty"`
	// PrimaryTimeout bounds each primary call, so that the caller's
	// deadline leaves time for the fallback (default DefaultPrimaryTimeout;
	// negative: none).
	PrimaryTimeout time.Duration `json:"primaryTimeout,omitempty"`
	// Now is the breaker's clock (nil: time.Now); tests inject one.
	Now func() time.Time `json:"-"`
}

// Validate reports a negative count or cool-down.
func (c BreakerConfig) Validate() error {
	if c.Failures < 0 || c.CoolDown < 0 {
		return fmt.Errorf("client config: breaker.failures and breaker.coolDown must not be negative, got %d and %s", c.Failures, c.CoolDown)
	}
	return nil
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.Failures == 0 {
		c.Failures = DefaultBreakerFailures
	}
	if c.CoolDown == 0 {
		c.CoolDown = DefaultBreakerCoolDown
	}
	if c.PrimaryTimeout == 0 {
		c.PrimaryTimeout = DefaultPrimaryTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// BreakerState is a circuit breaker's state.
type BreakerState string

// Breaker states: closed calls the primary; open sends every call to the
// fallback until the cool-down passes; half-open lets one call probe the
// primary (the others go to the fallback) and closes on its success.
const (
	BreakerClosed   = BreakerState(circuit.Closed)
	BreakerOpen     = BreakerState(circuit.Open)
	BreakerHalfOpen = BreakerState(circuit.HalfOpen)
)

// breaker is the fallback's circuit breaker over the primary: the state
// machine is internal/circuit's (shared with the embedder's breaker); this
// adds the cool-down as the client reads it and the reasons it gives.
type breaker struct {
	cfg BreakerConfig
	cb  *circuit.Breaker
}

func newBreaker(cfg BreakerConfig) *breaker {
	cfg = cfg.withDefaults()
	return &breaker{cfg: cfg, cb: circuit.New(circuit.Config{Failures: cfg.Failures, Cooldown: cfg.CoolDown, Now: cfg.Now})}
}

// allow reports whether this call may go to the primary, and when not,
// why. An open breaker past its cool-down turns half-open and lets this
// call through as the probe; while a probe runs, the others are refused.
// A call let through is ended with call.Success (a primary answer: the
// breaker closes), call.Failure (a primary failure: a probe's reopens the
// breaker, and so does the Failures-th consecutive one when closed) or
// call.Release (the call said nothing about the primary's health: the
// caller's request was invalid or its context ended).
func (b *breaker) allow() (call circuit.Call, ok bool, why string) {
	call, s, ok := b.cb.Allow()
	switch {
	case ok:
		return call, true, ""
	case s.State == circuit.HalfOpen:
		return call, false, fmt.Sprintf("circuit half-open, a probe of the primary is running (last: %s)", s.LastErr)
	}
	return call, false, fmt.Sprintf("circuit open after %d failures until %s (last: %s)", s.Failures, s.OpenUntil.UTC().Format(time.RFC3339), s.LastErr)
}

// State returns the breaker's state as a caller would see it now: open
// past its cool-down reads half-open.
func (b *breaker) State() BreakerState {
	s := b.cb.Snapshot()
	if s.State == circuit.Open && !b.cfg.Now().Before(s.OpenUntil) {
		return BreakerHalfOpen
	}
	return BreakerState(s.State)
}

// outcome classifies a primary call's error.
type outcome int

const (
	answered    outcome = iota // an answer, or an error about the request: return it
	unsupported                // the primary cannot do this: ask the fallback, health unknown
	failed                     // the primary failed: count it and ask the fallback
)

func classify(ctx context.Context, err error) outcome {
	switch {
	case err == nil, ctx.Err() != nil,
		errors.Is(err, memindex.ErrInvalid), errors.Is(err, memindex.ErrTooLarge), errors.Is(err, memindex.ErrNotFound):
		return answered
	case errors.Is(err, ErrUnsupported):
		return unsupported
	}
	return failed
}

// fallback serves from a primary Manager and, when it fails or its breaker
// is open, from a fallback Manager opened on first need. Every answer the
// fallback gives carries memindex.FallbackInfo{From, Reason}.
type fallback struct {
	primaryName, fallbackName string
	fbCfg                     Config
	br                        *breaker

	primary Manager // nil when it could not be opened
	openErr error   // why the primary could not be opened

	mu     sync.Mutex
	fb     Manager
	closed bool
}

var _ Manager = (*fallback)(nil)

// newFallback opens cfg's primary; when that fails the wrapper still
// serves from the fallback and says why in every answer.
func newFallback(ctx context.Context, cfg Config) *fallback {
	f := &fallback{primaryName: cfg.Backend, fallbackName: cfg.Fallback.Backend, fbCfg: *cfg.Fallback, br: newBreaker(cfg.Breaker)}
	pc := cfg
	pc.Fallback = nil
	f.primary, f.openErr = openBackend(ctx, pc)
	if f.openErr != nil {
		f.primary = nil
	}
	return f
}

// BreakerState returns the state of the primary's circuit breaker.
func (f *fallback) BreakerState() BreakerState { return f.br.State() }

// fallbackManager returns the fallback, opening it on first use. An open
// that fails is retried by the next call.
func (f *fallback) fallbackManager(ctx context.Context) (Manager, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("fallback: manager closed: %w", ErrNoBackend)
	}
	if f.fb == nil {
		m, err := Open(ctx, f.fbCfg)
		if err != nil {
			return nil, fmt.Errorf("open fallback %s: %w", f.fallbackName, err)
		}
		f.fb = m
	}
	return f.fb, nil
}

// try runs call against the primary behind the breaker. It returns done
// (the result is final) or the reason to ask the fallback.
func try[T any](ctx context.Context, f *fallback, call func(context.Context, Manager) (T, error)) (v T, done bool, reason string, err error) {
	if f.primary == nil {
		return v, false, fmt.Sprintf("%s backend could not be opened: %v", f.primaryName, f.openErr), nil
	}
	bc, ok, why := f.br.allow()
	if !ok {
		return v, false, why, nil
	}
	pctx := ctx
	if t := f.br.cfg.PrimaryTimeout; t > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	v, err = call(pctx, f.primary)
	switch classify(ctx, err) {
	case answered:
		if err == nil {
			bc.Success()
		} else {
			bc.Release()
		}
		return v, true, "", err
	case unsupported:
		bc.Release()
		return v, false, err.Error(), nil
	}
	bc.Failure(err)
	return v, false, err.Error(), nil
}

// serve runs call on the primary, else on the fallback; info is how the
// fallback's answer is annotated.
func serve[T any](ctx context.Context, f *fallback, op string, call func(context.Context, Manager) (T, error)) (T, *memindex.FallbackInfo, error) {
	v, done, reason, err := try(ctx, f, call)
	if done {
		return v, nil, err
	}
	fb, ferr := f.fallbackManager(ctx)
	if ferr != nil {
		return v, nil, fmt.Errorf("%s: %s failed (%s) and %w", op, f.primaryName, reason, ferr)
	}
	v, err = call(ctx, fb)
	if err != nil {
		return v, nil, fmt.Errorf("%s: %s failed (%s); fallback %s: %w", op, f.primaryName, reason, f.fallbackName, err)
	}
	return v, &memindex.FallbackInfo{From: f.primaryName, Reason: reason}, nil
}

func (f *fallback) Search(ctx context.Context, req memindex.SearchRequest) (memindex.SearchResponse, error) {
	resp, info, err := serve(ctx, f, "search", func(ctx context.Context, m Manager) (memindex.SearchResponse, error) {
		return m.Search(ctx, req)
	})
	if err != nil {
		return resp, err
	}
	if info != nil {
		if resp.Backend == "" {
			resp.Backend = f.fallbackName
		}
		if resp.Fallback == nil { // a nested fallback keeps its own, deeper reason
			resp.Fallback = info
		}
	}
	return resp, nil
}

func (f *fallback) Read(ctx context.Context, req memindex.ReadRequest) (memindex.ReadResponse, error) {
	resp, _, err := serve(ctx, f, "read", func(ctx context.Context, m Manager) (memindex.ReadResponse, error) {
		return m.Read(ctx, req)
	})
	return resp, err
}

func (f *fallback) Status(ctx context.Context) ([]memindex.StatusResponse, error) {
	sts, info, err := serve(ctx, f, "status", func(ctx context.Context, m Manager) ([]memindex.StatusResponse, error) {
		return m.Status(ctx)
	})
	if err != nil || info == nil {
		return sts, err
	}
	for i := range sts {
		if sts[i].Fallback == nil {
			sts[i].Fallback = info
		}
	}
	return sts, nil
}

// Sync syncs the primary; when it fails, the fallback (opened if need be).
func (f *fallback) Sync(ctx context.Context, req SyncRequest) error {
	_, _, err := serve(ctx, f, "sync", func(ctx context.Context, m Manager) (struct{}, error) {
		return struct{}{}, m.Sync(ctx, req)
	})
	return err
}

func (f *fallback) ProbeEmbeddings(ctx context.Context) error {
	_, _, err := serve(ctx, f, "probe embeddings", func(ctx context.Context, m Manager) (struct{}, error) {
		return struct{}{}, m.ProbeEmbeddings(ctx)
	})
	return err
}

func (f *fallback) ProbeVectors(ctx context.Context) error {
	_, _, err := serve(ctx, f, "probe vectors", func(ctx context.Context, m Manager) (struct{}, error) {
		return struct{}{}, m.ProbeVectors(ctx)
	})
	return err
}

// Close closes the primary and the fallback if it was opened.
func (f *fallback) Close(ctx context.Context) error {
	f.mu.Lock()
	fb := f.fb
	already := f.closed
	f.closed = true
	f.mu.Unlock()
	if already {
		return nil
	}
	var errs []error
	if f.primary != nil {
		errs = append(errs, f.primary.Close(ctx))
	}
	if fb != nil {
		errs = append(errs, fb.Close(ctx))
	}
	return errors.Join(errs...)
}
