package evalcorpus

import (
	"errors"
	"fmt"
)

// Errors returned by Config.Validate and Generate.
var (
	// ErrLang is returned for a language other than "", "en" or "zh".
	ErrLang = errors.New("evalcorpus: unknown language")
	// ErrConversations is returned for a negative or too large number of
	// conversations.
	ErrConversations = errors.New("evalcorpus: conversations out of range")
)

// MaxConversations is the largest Config.Conversations accepted.
const MaxConversations = 999

// Config chooses a generated corpus. The zero Config is the default English
// corpus.
type Config struct {
	// Lang is "en" (the default when empty) or "zh".
	Lang string
	// Conversations is the number of conversations, 10 when zero.
	Conversations int
	// Seed selects the corpus, 1 when zero. The same Config gives the same
	// bytes.
	Seed uint64
}

// Validate reports whether c describes a corpus Generate can build.
func (c Config) Validate() error {
	switch c.Lang {
	case "", "en", "zh":
	default:
		return fmt.Errorf("%w: %q", ErrLang, c.Lang)
	}
	if c.Conversations < 0 || c.Conversations > MaxConversations {
		return fmt.Errorf("%w: %d (want 0..%d)", ErrConversations, c.Conversations, MaxConversations)
	}
	return nil
}

// withDefaults returns c with its zero fields set to the defaults.
func (c Config) withDefaults() Config {
	if c.Lang == "" {
		c.Lang = "en"
	}
	if c.Conversations == 0 {
		c.Conversations = 10
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}
