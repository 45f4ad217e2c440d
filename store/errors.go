package store

import "errors"

// Sentinel errors of package store. Errors returned by the package wrap one of
// these (or a driver error) with the operation that failed.
var (
	// ErrInvalidConfig is returned by Open when Config is unusable (Dims < 1,
	// negative ReadConns) or the path is empty.
	ErrInvalidConfig = errors.New("invalid config")
	// ErrNotWAL is returned by Open when the journal mode read back is not WAL
	// (for example an in-memory database): readers would block the writer.
	ErrNotWAL = errors.New("journal mode is not wal")
	// ErrPragma is returned by Open when another pragma the store relies on
	// (busy_timeout, foreign_keys) does not read back as set.
	ErrPragma = errors.New("pragma not applied")
	// ErrNoFTS5 is returned by Open when SQLite was built without FTS5 (build
	// with -tags sqlite_fts5).
	ErrNoFTS5 = errors.New("sqlite built without fts5")
	// ErrNoVec is wrapped in the reason VectorMode gives when the sqlite-vec
	// extension is missing (vec_version() fails). Open does not fail with it:
	// the shard keeps its vectors in a plain table (go-scan mode).
	ErrNoVec = errors.New("sqlite-vec not loaded")
	// ErrDims is returned by Open when the file was created with another
	// vector dimension, and by Apply and SetVectors when a vector's length is
	// not the shard's dimension (the whole call then changes nothing).
	ErrDims = errors.New("vector dimension mismatch")
	// ErrSpace is returned by Open when the file holds vectors of another
	// vector space (embedder provider or model) than Config.Space.
	ErrSpace = errors.New("vector space mismatch")
	// ErrSchemaTooNew is returned by Open when the file records a migration
	// this binary does not know: it was written by a newer version.
	ErrSchemaTooNew = errors.New("schema is newer than this binary")
	// ErrReadOnly is returned by Open with Config.ReadOnly when the file is
	// missing or would need a write first (a migration, a keyword re-index):
	// open it read-write once, e.g. by starting `memindex serve` on it.
	ErrReadOnly = errors.New("shard cannot be opened read-only")
	// ErrInvalidBatch is returned by Apply when a batch contradicts itself (a
	// chunk whose namespace or session differs from its SessionChunks, an
	// empty chunk id, a sequence beyond int64). Nothing is applied.
	ErrInvalidBatch = errors.New("invalid batch")
	// ErrPartial is wrapped by a *PartialError: a search answered, but not
	// over everything it should have (see PartialError).
	ErrPartial = errors.New("partial result")
	// ErrInconsistent is returned by Check when the shard's tables disagree.
	ErrInconsistent = errors.New("shard is inconsistent")
	// ErrSnapshot is returned by VerifySnapshot when a snapshot file is
	// damaged (digest, integrity_check or FTS5 integrity-check fails) or
	// does not record what its description says.
	ErrSnapshot = errors.New("snapshot invalid")
	// ErrOldUnits is returned by Open (read-write) when the shard holds
	// session chunks that span several messages: it was built by a
	// memindex that indexed windows of messages, and a search now returns
	// one message a hit. Rebuild it from the stream (memindex rebuild).
	ErrOldUnits = errors.New("shard holds multi-message session windows of an older memindex")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("store closed")
)

// PartialError is returned together with results by KeywordSearch when the
// query's terms were all so common that ranking every match would exceed the
// row budget, so only the newest matching chunks were ranked. The results are
// valid and best-first within what was ranked; Reason says what was left out.
type PartialError struct {
	Reason string
}

// Error returns the reason.
func (e *PartialError) Error() string { return e.Reason }

// Unwrap returns ErrPartial.
func (e *PartialError) Unwrap() error { return ErrPartial }

// Partial returns the reason; callers that must not import store match on
// interface{ Partial() string }.
func (e *PartialError) Partial() string { return e.Reason }
