package memindex

import (
	"errors"
	"fmt"
)

// Limits are the configurable size caps on what a worker accepts: events on
// the ingest side, searches on the query side. A zero field takes its
// default, which is the constant of the same name (MaxEventBytes,
// MaxTextBytes, MaxQueryBytes, MaxK); MaxSessionMessages 0 means no cap.
//
// The constants are also the highest values a Limits may set: the stream's
// max message size is MaxEventBytes, a search request is at most
// MaxRequestSize bytes, and the engine draws its candidates from pools of at
// most MaxK. Limits can lower a cap, never raise one past its constant.
//
// Every check made with Limits is a pure function of the input, so a shard
// rebuilt from the stream with the same Limits dead-letters the same events.
type Limits struct {
	// MaxEventBytes is the largest event payload accepted.
	MaxEventBytes int
	// MaxTextBytes is the largest message text, image caption or record
	// text accepted.
	MaxTextBytes int
	// MaxSessionMessages caps a session's length: a message whose seq is
	// over it is refused (ErrTooLarge, field seq), never truncated; seqs
	// number a session's messages from 1, so the cap is the most messages
	// a session can hold. 0: no cap.
	MaxSessionMessages int64
	// MaxQueryBytes is the longest search query accepted.
	MaxQueryBytes int
	// MaxK is the most hits a search may ask for.
	MaxK int
}

// DefaultLimits returns the limits a worker applies when none are
// configured: today's constants, no cap on session length.
func DefaultLimits() Limits {
	return Limits{MaxEventBytes: MaxEventBytes, MaxTextBytes: MaxTextBytes, MaxQueryBytes: MaxQueryBytes, MaxK: MaxK}
}

// WithDefaults returns l with each zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MaxEventBytes == 0 {
		l.MaxEventBytes = d.MaxEventBytes
	}
	if l.MaxTextBytes == 0 {
		l.MaxTextBytes = d.MaxTextBytes
	}
	if l.MaxQueryBytes == 0 {
		l.MaxQueryBytes = d.MaxQueryBytes
	}
	if l.MaxK == 0 {
		l.MaxK = d.MaxK
	}
	return l
}

// Validate reports every limit that is out of range, naming its field;
// zero fields are valid (they take the default).
func (l Limits) Validate() error {
	w := l.WithDefaults()
	var errs []error
	check := func(field string, v, max int64) {
		if v < 1 || v > max {
			errs = append(errs, fmt.Errorf("limits: %s must be between 1 and %d, got %d", field, max, v))
		}
	}
	check("maxEventBytes", int64(w.MaxEventBytes), MaxEventBytes)
	check("maxTextBytes", int64(w.MaxTextBytes), int64(w.MaxEventBytes))
	check("maxQueryBytes", int64(w.MaxQueryBytes), MaxRequestSize)
	check("maxK", int64(w.MaxK), MaxK)
	if l.MaxSessionMessages < 0 {
		errs = append(errs, fmt.Errorf("limits: maxSessionMessages must not be negative (0: no cap), got %d", l.MaxSessionMessages))
	}
	return errors.Join(errs...)
}
