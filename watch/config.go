package watch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
)

// DefaultDebounce is how long a path must be quiet after its last event
// before it is looked at, when Config.Debounce is zero.
const DefaultDebounce = 200 * time.Millisecond

// maxDebounce bounds Config.Debounce: a longer quiet time is a typo.
const maxDebounce = time.Minute

// Config configures Run.
type Config struct {
	// Dir is the memory folder; Namespace the namespace its files are
	// published to; DirPath the project they belong to ("" global), as for
	// client.MemoryFileEvents.
	Dir       string
	Namespace string
	DirPath   string
	// Excludes are filepath.Match globs on slash paths relative to Dir; a
	// path they exclude (client.ExcludedPath) is never sent, and one sent
	// before it was excluded is deleted.
	Excludes []string
	// Debounce is the quiet time after a path's last event before it is
	// looked at (0: DefaultDebounce); MaxDelay bounds the wait of a path
	// that keeps changing (0: 10×Debounce).
	Debounce time.Duration
	MaxDelay time.Duration
	// StateFile records what the stream acknowledged (required;
	// DefaultStateFile gives the usual place).
	StateFile string
	// AckTimeout bounds the wait for each acknowledgement (0:
	// client.DefaultRequestTimeout); an event not acknowledged in time is
	// sent again later, with back-off.
	AckTimeout time.Duration
	// Inject, when set, sees each message before it is sent (trace
	// context headers).
	Inject func(*nats.Msg)
	// OnChange, when set, is told of each event the stream acknowledged;
	// OnProblem of each path that could not be read or sent, and why (the
	// rest go on); OnSynced, once, of the start sync's summary. All are
	// called on Run's goroutine.
	OnChange  func(Change)
	OnProblem func(path string, err error)
	OnSynced  func(Summary)
}

// Validate checks the settings; each error names its field and wraps
// ErrInvalid. It does no I/O: Run checks the folder.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Dir == "":
		return bad("Dir (the memory folder) is required")
	case !memindex.ValidNamespace(c.Namespace):
		return bad("Namespace %q is not 1-64 characters of [A-Za-z0-9_-]", c.Namespace)
	case c.Debounce < 0 || c.Debounce > maxDebounce:
		return bad("Debounce %v is not between 0 and %v", c.Debounce, maxDebounce)
	case c.MaxDelay < 0:
		return bad("MaxDelay %v is negative", c.MaxDelay)
	case c.AckTimeout < 0:
		return bad("AckTimeout %v is negative", c.AckTimeout)
	case c.StateFile == "":
		return bad("StateFile is required (DefaultStateFile gives one)")
	}
	if err := client.CheckExcludes(c.Excludes); err != nil {
		return bad("Excludes: %v", err)
	}
	return nil
}

// withDefaults fills the zero durations.
func (c Config) withDefaults() Config {
	if c.Debounce == 0 {
		c.Debounce = DefaultDebounce
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = 10 * c.Debounce
	}
	c.MaxDelay = max(c.MaxDelay, c.Debounce)
	if c.AckTimeout == 0 {
		c.AckTimeout = client.DefaultRequestTimeout
	}
	return c
}

// DefaultStateFile is where Run keeps the state of folder dir published to
// namespace ns for project dirPath: under $XDG_STATE_HOME (else
// ~/.local/state) in memindex/watch/, one file per folder, namespace and
// dirPath.
func DefaultStateFile(dir, ns, dirPath string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory: set XDG_STATE_HOME or HOME, or name a state file: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(ns + "\x00" + dirPath + "\x00" + abs))
	return filepath.Join(base, "memindex", "watch", ns+"-"+hex.EncodeToString(sum[:8])+".json"), nil
}
