package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
)

// Backends a Config selects.
const (
	// BackendRemote searches the fleet of memindex workers over NATS.
	BackendRemote = "remote"
	// BackendLocal opens shard files read-only in process.
	BackendLocal = "local"
	// BackendQMD runs the QMD command-line search tool.
	BackendQMD = "qmd"
	// BackendNone answers every call with ErrNoBackend.
	BackendNone = "none"
)

// Manager is what a Go program (and `memindex search`) searches through,
// whatever the backend. Open returns one; it is safe for concurrent use.
type Manager interface {
	// Search answers req. The response's Backend names the backend that
	// answered; Fallback, when set, says why the primary did not.
	Search(ctx context.Context, req memindex.SearchRequest) (memindex.SearchResponse, error)
	// Read returns a session's messages or a memory file's lines (see
	// memindex.ReadRequest). The qmd backend reads files only.
	Read(ctx context.Context, req memindex.ReadRequest) (memindex.ReadResponse, error)
	// Status returns one status per worker (remote) or one for the backend
	// (local, qmd), each with Backend (and Fallback) set.
	Status(ctx context.Context) ([]memindex.StatusResponse, error)
	// Sync brings the backend up to date with what was written: remote
	// waits until every worker has applied the stream up to req.Seq (or, with
	// Seq 0, everything in it when Sync was called); local reopens its shard
	// files, so writes made since Open are seen; qmd runs `qmd update`.
	Sync(ctx context.Context, req SyncRequest) error
	// ProbeEmbeddings reports whether queries can be embedded for the
	// vector leg: nil when they can, else an error saying why not.
	ProbeEmbeddings(ctx context.Context) error
	// ProbeVectors reports whether vector search answers: nil when it
	// does, else an error saying why not (searches then run keyword-only).
	ProbeVectors(ctx context.Context) error
	// Close releases what Open acquired (connections, shard files, a lazily
	// created fallback). Calls after Close fail with ErrNoBackend.
	Close(ctx context.Context) error
}

// SyncRequest tunes Manager.Sync.
type SyncRequest struct {
	// Seq is a stream sequence to wait for, as a publish acknowledgement
	// gives it (remote only); 0 waits for everything in the stream.
	Seq uint64
}

// Config selects and configures a Manager's backend. It is plain data
// (but for Remote.Conn, Local.Opener and Breaker.Now) so that a Cache can
// key managers by its JSON form.
type Config struct {
	// Backend is one of BackendRemote, BackendLocal, BackendQMD,
	// BackendNone (required).
	Backend string       `json:"backend"`
	Remote  RemoteConfig `json:"remote,omitzero"`
	Local   LocalConfig  `json:"local,omitzero"`
	QMD     QMDConfig    `json:"qmd,omitzero"`
	// Fallback, when set, serves whenever this backend fails, behind a
	// circuit breaker tuned by Breaker (fallback.go). It is opened on first
	// use only.
	Fallback *Config       `json:"fallback,omitempty"`
	Breaker  BreakerConfig `json:"breaker,omitzero"`
}

// RemoteConfig configures the remote backend: the memindex service over
// NATS, on Conn or, when Conn is nil, on a connection to URL that the
// manager makes (retrying in the background while the server is down) and
// closes.
type RemoteConfig struct {
	URL  string     `json:"url,omitempty"`
	Conn *nats.Conn `json:"-"`
	// StatusWait is how long Status and the probes gather worker replies
	// (default 500ms).
	StatusWait time.Duration `json:"statusWait,omitempty"`
	// SyncPoll is how often Sync asks the workers how far they are
	// (default 100ms).
	SyncPoll time.Duration `json:"syncPoll,omitempty"`
}

// LocalConfig configures the local backend: shard files opened read-only
// in process. Reading them takes cgo SQLite, which this package must not
// compile in, so Opener opens them: query.Local is the one memindex has.
type LocalConfig struct {
	// Path is a data directory (holding shards/, as `memindex serve
	// --data` makes it), a shards directory of p<N>.db files, or one shard
	// file (required).
	Path string `json:"path,omitempty"`
	// NoSqliteVec opens the shards without sqlite-vec.
	NoSqliteVec bool `json:"noSqliteVec,omitempty"`
	// KeywordOnly runs every search keyword-only: queries are not embedded.
	KeywordOnly bool `json:"keywordOnly,omitempty"`
	// Opener opens the backend (required): query.Local{} (its Embedder
	// field chooses the query embedder).
	Opener LocalOpener `json:"-"`
}

// LocalOpener opens the local backend for cfg. It enters a CacheKey by
// its type and its %v form, so give it a String method that names what
// tells two openers apart (query.Local names its embedder).
type LocalOpener interface {
	OpenLocal(ctx context.Context, cfg LocalConfig) (Manager, error)
}

// QMDConfig configures the qmd backend (qmd.go).
type QMDConfig struct {
	// Command is the qmd executable, a path or a name looked up on PATH
	// (default "qmd").
	Command string `json:"command,omitempty"`
	// Collections restricts searches to these QMD collections (-c each).
	Collections []string `json:"collections,omitempty"`
	// NamespaceCollection searches the collection named like the request's
	// namespace (added to Collections).
	NamespaceCollection bool `json:"namespaceCollection,omitempty"`
	// Timeout bounds one qmd run (default 30s).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Validate reports a setting that is missing or out of range, naming it.
func (c Config) Validate() error {
	switch c.Backend {
	case BackendRemote:
		if c.Remote.Conn == nil && c.Remote.URL == "" {
			return errors.New("client config: remote backend needs remote.url (a NATS URL) or remote.Conn")
		}
	case BackendLocal:
		if c.Local.Path == "" {
			return errors.New("client config: local backend needs local.path (a data directory or a shard file)")
		}
		if c.Local.Opener == nil {
			return errors.New("client config: local backend needs local.Opener (query.Local{}: reading shards takes cgo SQLite, which package client does not compile in)")
		}
	case BackendQMD:
		if c.QMD.Timeout < 0 {
			return fmt.Errorf("client config: qmd.timeout must not be negative, got %s", c.QMD.Timeout)
		}
	case BackendNone:
	case "":
		return errors.New("client config: backend is required: remote, local, qmd or none")
	default:
		return fmt.Errorf("client config: backend %q is not one of remote, local, qmd, none", c.Backend)
	}
	if c.Remote.StatusWait < 0 || c.Remote.SyncPoll < 0 {
		return errors.New("client config: remote.statusWait and remote.syncPoll must not be negative")
	}
	if err := c.Breaker.Validate(); err != nil {
		return err
	}
	if c.Fallback != nil {
		if c.Fallback.Backend == c.Backend {
			return fmt.Errorf("client config: fallback backend %q is the primary's; choose another or none", c.Backend)
		}
		if err := c.Fallback.Validate(); err != nil {
			return fmt.Errorf("fallback: %w", err)
		}
	}
	return nil
}

// Open returns the Manager cfg selects. With cfg.Fallback set it is a
// fallback wrapper (fallback.go): a primary that cannot be opened is then
// not an error, the fallback serves and every answer says why.
func Open(ctx context.Context, cfg Config) (Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Fallback != nil {
		return newFallback(ctx, cfg), nil
	}
	return openBackend(ctx, cfg)
}

// openBackend opens cfg's own backend, ignoring cfg.Fallback.
func openBackend(ctx context.Context, cfg Config) (Manager, error) {
	switch cfg.Backend {
	case BackendRemote:
		return openRemote(cfg.Remote)
	case BackendLocal:
		return cfg.Local.Opener.OpenLocal(ctx, cfg.Local)
	case BackendQMD:
		return openQMD(cfg.QMD)
	}
	return noBackend{}, nil
}

// noBackend is the "none" backend: every call fails with ErrNoBackend.
type noBackend struct{}

func (noBackend) Search(context.Context, memindex.SearchRequest) (memindex.SearchResponse, error) {
	return memindex.SearchResponse{}, fmt.Errorf("search: %w", ErrNoBackend)
}

func (noBackend) Read(context.Context, memindex.ReadRequest) (memindex.ReadResponse, error) {
	return memindex.ReadResponse{}, fmt.Errorf("read: %w", ErrNoBackend)
}

func (noBackend) Status(context.Context) ([]memindex.StatusResponse, error) {
	return nil, fmt.Errorf("status: %w", ErrNoBackend)
}

func (noBackend) Sync(context.Context, SyncRequest) error {
	return fmt.Errorf("sync: %w", ErrNoBackend)
}

func (noBackend) ProbeEmbeddings(context.Context) error {
	return fmt.Errorf("probe embeddings: %w", ErrNoBackend)
}

func (noBackend) ProbeVectors(context.Context) error {
	return fmt.Errorf("probe vectors: %w", ErrNoBackend)
}

func (noBackend) Close(context.Context) error { return nil }

// withBackend sets Backend on every status.
func withBackend(sts []memindex.StatusResponse, backend string) []memindex.StatusResponse {
	sts = slices.Clone(sts)
	for i := range sts {
		sts[i].Backend = backend
	}
	return sts
}
