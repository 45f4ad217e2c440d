package circuit

import (
	"sync"
	"time"
)

// State is a Breaker's state.
type State string

// States of a Breaker.
const (
	// Closed lets every call through and counts consecutive failures.
	Closed State = "closed"
	// Open refuses every call until its cool-down ends.
	Open State = "open"
	// HalfOpen lets one probe call through and refuses the others.
	HalfOpen State = "half-open"
)

// Config configures a Breaker. Its users give it their defaults and
// validate their own configuration; New takes fields as they are.
type Config struct {
	// Failures is how many consecutive failures open the breaker (at
	// least 1: a smaller value is read as 1).
	Failures int
	// Cooldown is how long the breaker stays open before it lets a probe
	// through.
	Cooldown time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Snapshot is a Breaker's state at one instant.
type Snapshot struct {
	// State is Closed, Open or HalfOpen. An open breaker whose OpenUntil
	// has passed stays Open until the next Allow, which lets that call
	// through as the probe.
	State State
	// Failures is the number of consecutive failures since the last
	// success, probes included.
	Failures int
	// OpenUntil is when an open breaker lets a probe through: the time of
	// the failure that opened it plus Cooldown. It is kept while half-open
	// and zero once closed.
	OpenUntil time.Time
	// Opens counts how many times the breaker has opened (or re-opened
	// after a failed probe).
	Opens uint64
	// LastErr is the message of the last failure; "" once closed.
	LastErr string
	// Probing reports a half-open probe in flight.
	Probing bool
}

// Breaker is a consecutive-failure circuit breaker with one half-open
// probe. It is safe for concurrent use.
type Breaker struct {
	failures int
	cooldown time.Duration
	now      func() time.Time

	mu  sync.Mutex
	s   Snapshot
	gen uint64 // bumped on every state change; stale outcomes are ignored
}

// New returns a closed Breaker.
func New(cfg Config) *Breaker {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Breaker{failures: max(cfg.Failures, 1), cooldown: cfg.Cooldown, now: cfg.Now, s: Snapshot{State: Closed}}
}

// Snapshot returns the breaker's state now.
func (b *Breaker) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s
}

// Now reads the breaker's clock.
func (b *Breaker) Now() time.Time { return b.now() }

// Call is one call Allow let through. Exactly one of Success, Failure or
// Release ends it; a Call ended twice, or the zero Call, does nothing.
type Call struct {
	b     *Breaker
	gen   uint64
	probe bool
}

// Allow reports whether a call may go through now. When ok, the caller
// makes the call and ends c with its outcome. When not, s says why: State
// Open (until s.OpenUntil) or HalfOpen (s.Probing: a probe is in flight).
// An open breaker past its cool-down turns half-open and lets this call
// through as the probe.
func (b *Breaker) Allow() (c Call, s Snapshot, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.s.State {
	case Open:
		if b.now().Before(b.s.OpenUntil) {
			return Call{}, b.s, false
		}
		b.setState(HalfOpen)
		fallthrough
	case HalfOpen:
		if b.s.Probing {
			return Call{}, b.s, false
		}
		b.s.Probing = true
		return Call{b: b, gen: b.gen, probe: true}, b.s, true
	}
	return Call{b: b, gen: b.gen}, b.s, true
}

// Success ends a call that the protected service answered: the failure
// count resets and the breaker closes.
func (c *Call) Success() {
	c.end(func(b *Breaker) {
		b.s.Failures, b.s.LastErr = 0, ""
		if b.s.State != Closed {
			b.s.OpenUntil = time.Time{}
			b.setState(Closed)
		}
	})
}

// Failure ends a call that failed in a way that may be the protected
// service's: it counts, and the Failures-th consecutive one, or a probe's,
// opens the breaker for Cooldown from now.
func (c *Call) Failure(err error) {
	probe := c.probe
	c.end(func(b *Breaker) {
		b.s.Failures++
		if err != nil {
			b.s.LastErr = err.Error()
		}
		if probe || b.s.Failures >= b.failures {
			b.s.OpenUntil = b.now().Add(b.cooldown)
			b.s.Opens++
			b.setState(Open)
		}
	})
}

// Release ends a call whose outcome says nothing about the protected
// service's health (the caller gave up, or its request was at fault): a
// probe's release lets the next call probe.
func (c *Call) Release() { c.end(func(*Breaker) {}) }

// end applies f under the lock unless c was ended already or the state
// changed since c began.
func (c *Call) end(f func(*Breaker)) {
	b := c.b
	if b == nil {
		return
	}
	c.b = nil
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.gen != b.gen {
		return // the state changed while the call ran
	}
	if c.probe {
		b.s.Probing = false
	}
	f(b)
}

func (b *Breaker) setState(s State) {
	b.s.State = s
	b.gen++
}
