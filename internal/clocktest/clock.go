// Package clocktest is the tests' injected clock: a Clock moves only when a
// test sets or advances it, so cool-downs and deadlines that production
// code reads from an injected func() time.Time are driven without waiting.
//
// It must not be used by production code, nor hold anything but the clock.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a settable clock, safe for concurrent use. Pass its Now method
// where code takes a clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a Clock that reads t until moved.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
