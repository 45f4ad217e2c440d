package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Config is the declarative configuration of a shard.
type Config struct {
	// Dims is the vector dimension (required). A file remembers the dimension
	// it was created with; opening it with another one fails with ErrDims.
	Dims int
	// ReadConns is the size of the reader connection pool (default 4).
	ReadConns int
	// Space names the vector space (embedder provider, model, dimension),
	// e.g. "builtin/hash-ngram-v1/384". A file remembers the first space it
	// was opened with; opening it with another fails with ErrSpace, so
	// vectors of two models are never mixed. Empty skips the check.
	Space string
	// NoSqliteVec opens the shard without sqlite-vec, exactly as if the
	// binary had none: vectors are kept in the plain table vec_plain and
	// VectorMode reports VectorModeGoScan (for operators working around a
	// sqlite-vec problem, and for tests). A shard also runs in go-scan when
	// sqlite-vec is missing or its vec0 table fails.
	NoSqliteVec bool
	// OnReindex, when set, is called after each batch of the keyword index
	// rebuild that Open runs when the file was indexed by another tokenizer
	// version (or before migration 0004), with the chunks done and the
	// total; Open returns when it is complete. Use it to log progress.
	OnReindex func(done, total int64)
	// ReadOnly opens an existing file for reading only (SQLite mode=ro and
	// query_only on every connection), for a process that searches shards
	// another one writes: Open never writes, migrates, re-indexes, records
	// Space or repairs vectors; it fails with ErrReadOnly when the file is
	// missing or would need one of those writes first. Writes on such a
	// shard fail. The vector index is loaded once at Open: reopen to see
	// later writes.
	ReadOnly bool
	// CacheKiB is the SQLite page cache of each of the shard's connections
	// (the writer and every reader) in KiB; 0 is DefaultCacheKiB. A shard's
	// page caches together hold at most (1+ReadConns)×CacheKiB KiB.
	CacheKiB int
	// MmapBytes is how much of the file each connection maps (SQLite
	// mmap_size); 0 is DefaultMmapBytes, negative maps nothing. Mapped pages
	// are the file's page cache: they count in a process's RSS while
	// resident but the kernel reclaims them under pressure. A search's
	// rescoring reads walk vec0's vector-chunk BLOBs page by page: mapped,
	// 4.9 µs a vector against 8.6 through reads over 20,000 vectors and
	// 12.9 against 18.1 over 300,000 (BenchmarkRescoreReads), so the
	// default maps what SQLite allows. Each connection maps on its own, and
	// a page it touches first is a page fault: at 1,000,000 chunks, with
	// the maps still cold, a read took 55–77 µs mapped against 32–35
	// without a map (BENCHMARKS.md, eleventh session).
	MmapBytes int64
	// VectorCopyBytes bounds the float32 copies of the shard's vectors kept
	// in memory for rescoring (store/vecexact.go): a shard whose copies would
	// take more reads its candidates' vectors from SQLite instead. 0 is
	// DefaultVectorCopyBytes, negative keeps none.
	VectorCopyBytes int64
}

// Defaults of Config's memory settings.
const (
	DefaultCacheKiB        = 32000
	DefaultMmapBytes       = 0x7fff0000 // SQLite's ceiling (SQLITE_MAX_MMAP_SIZE): 2 GiB less 64 KiB
	DefaultVectorCopyBytes = 16 << 20
)

// Validate reports whether the configuration is usable.
func (c Config) Validate() error {
	if c.Dims < 1 {
		return fmt.Errorf("dims %d: %w", c.Dims, ErrInvalidConfig)
	}
	if c.ReadConns < 0 {
		return fmt.Errorf("read conns %d: %w", c.ReadConns, ErrInvalidConfig)
	}
	if c.CacheKiB < 0 {
		return fmt.Errorf("cache %d KiB: %w", c.CacheKiB, ErrInvalidConfig)
	}
	return nil
}

// withDefaults fills in the defaults of c's zero fields.
func (c Config) withDefaults() Config {
	if c.ReadConns == 0 {
		c.ReadConns = defaultReadConns
	}
	if c.CacheKiB == 0 {
		c.CacheKiB = DefaultCacheKiB
	}
	if c.MmapBytes == 0 {
		c.MmapBytes = DefaultMmapBytes
	}
	if c.MmapBytes < 0 {
		c.MmapBytes = 0
	}
	return c
}

// CacheBytes is the most a shard opened with c keeps in SQLite page
// caches: (1+ReadConns) connections × CacheKiB.
func (c Config) CacheBytes() int64 {
	c = c.withDefaults()
	return int64(1+c.ReadConns) * int64(c.CacheKiB) << 10
}

// sqlOpen opens a pool of the shard driver's connections to dsn, each with
// mmap_size set to mmap bytes after the driver's own tuning, then the
// pragmas more (if any).
func sqlOpen(dsn string, mmap int64, more ...string) *sql.DB {
	return sql.OpenDB(mmapConnector{dsn: dsn, mmap: mmap, more: more})
}

type mmapConnector struct {
	dsn  string
	mmap int64
	more []string
}

func (c mmapConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := shardDriver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	for _, q := range append([]string{fmt.Sprintf("PRAGMA mmap_size = %d", c.mmap)}, c.more...) {
		if _, err := conn.(*sqlite3.SQLiteConn).Exec(q, nil); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

func (c mmapConnector) Driver() driver.Driver { return shardDriver }

const (
	defaultReadConns = 4
	busyTimeoutMS    = 5000
	driverName       = "memindex-sqlite3"
)

var (
	registerOnce sync.Once
	// vecAutoErr is why sqlite-vec could not be registered (nil: it was).
	vecAutoErr error
	// rowExecErr is why memindex_conn_handle() could not be registered
	// (nil: it was); the writer needs it (rowexec.go).
	rowExecErr error
)

// shardDriver is the SQLite driver of shards, with the per-connection
// tuning pragmas (a shard's connections then set mmap_size from its
// Config: sqlOpen).
var shardDriver = &sqlite3.SQLiteDriver{
	ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(`PRAGMA temp_store = MEMORY; PRAGMA mmap_size = 268435456;
			PRAGMA journal_size_limit = 67108864; PRAGMA analysis_limit = 400`, nil)
		return err
	},
}

// registerDriver loads sqlite-vec into every future connection (but those
// opened with noVecParam) and registers the driver whose connect hook sets
// the per-connection tuning pragmas.
func registerDriver() {
	registerOnce.Do(func() {
		vecAutoErr = autoLoadVec()
		rowExecErr = registerRowExec()
		sql.Register(driverName, shardDriver)
	})
}

// Shard is one SQLite file holding one partition: messages, chunks, their FTS5
// index and vectors of any number of namespaces. It has one writer connection
// and a pool of readers; all methods are safe for concurrent use.
type Shard struct {
	path string
	dims int
	// visible is held for writing from a commit until the in-memory indexes
	// hold what it wrote, and for reading while Stats takes its snapshot,
	// so a count Stats reports is of rows a search already finds (and by
	// WaitIndexed).
	visible sync.RWMutex
	w       *sql.DB // MaxOpenConns 1: the only writer
	r       *sql.DB // readers, query_only
	// ckpt checkpoints the WAL after the writer's commits (checkpoint.go;
	// nil when read-only).
	ckpt *checkpointer
	ws   *writeStmts
	// rx runs the writer's statements of every message (rowexec.go);
	// writeMu guards it.
	rx rowExec
	// sids caches the writer's session ids (apply.go); writeMu guards it.
	sids  map[SessionRef]int64
	index *vectorIndex
	// kw is the keyword index (kwindex.go); nil when it failed to follow a
	// commit, and then FTS5 ranks every keyword search.
	kw atomic.Pointer[kwIndex]
	// kwDropped is why kw was dropped ("" while it is not).
	kwDropped atomic.Value
	// kwl loads kw in the background (nil when it was loaded at Open).
	kwl   *kwLoad
	sizes *nsSizes
	df    *termDF
	// speakers are the speaker names of each namespace (speakers.go).
	speakers *speakerSet
	// vec is the vector mode (see VectorMode); it changes from sqlite-vec
	// to go-scan at most once while open, under writeMu.
	vec atomic.Pointer[vecState]
	// applied is the applied sequence of a writable shard (AppliedSeq):
	// read at Open, advanced by Apply once the in-memory indexes hold the
	// batch.
	applied atomic.Uint64
	// vecLoaded says sqlite-vec is loaded on the shard's connections.
	vecLoaded bool
	// readOnly: opened with Config.ReadOnly; w is a read-only connection.
	readOnly bool
	// han loads the Chinese dictionary in the background when the shard
	// holds Han text (nil otherwise); Close stops it (segment_load.go).
	han *hanLoader

	// writeMu serialises write transactions together with the in-memory
	// index update that follows their commit, so index updates apply in
	// commit order.
	writeMu sync.Mutex
	closed  atomic.Bool

	// pageBytes is the file's SQLite page size (pagesize.go).
	pageBytes int

	// applyHook, when set (tests only), runs after each stage of Apply with
	// the stage name; an error aborts the transaction. It also runs after
	// the commit ("commit") and after the in-memory indexes follow it
	// ("indexes"), where its error is ignored (benchmarks time the stages).
	applyHook func(stage string) error
}

// dsn builds a go-sqlite3 URI for path with the given query parameters.
func dsn(path, params string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + esc + "?" + params
}

// Open opens (creating if needed) the shard file at path, verifies the
// pragmas and extensions the store relies on, applies the embedded
// migrations and loads the in-memory vector index.
func Open(ctx context.Context, path string, cfg Config) (*Shard, error) {
	s, err := open(ctx, path, cfg)
	if err != nil {
		return nil, fmt.Errorf("open shard: %w", err)
	}
	return s, nil
}

func open(ctx context.Context, path string, cfg Config) (_ *Shard, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if path == "" || path == ":memory:" || strings.Contains(path, "mode=memory") {
		return nil, fmt.Errorf("path %q: a shard needs a file: %w", path, ErrInvalidConfig)
	}
	cfg = cfg.withDefaults()
	registerDriver()
	if rowExecErr != nil {
		return nil, rowExecErr
	}
	if cfg.ReadOnly {
		return openReadOnly(ctx, path, cfg)
	}
	common := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=on&_synchronous=NORMAL&_cache_size=-%d&_stmt_cache_size=32&_mutex=no", busyTimeoutMS, cfg.CacheKiB)
	if cfg.NoSqliteVec {
		common += "&" + noVecParam
	}
	pageBytes, err := prepareShardFile(path)
	if err != nil {
		return nil, err
	}
	// The writer checkpoints the WAL only past walValveBytes: the
	// checkpointer does it in the background (checkpoint.go).
	w := sqlOpen(dsn(path, "_journal_mode=WAL&_txlock=immediate&"+common), cfg.MmapBytes,
		fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", max(walValveBytes/pageBytes, 1)))
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Shard{path: path, dims: cfg.Dims, w: w, pageBytes: pageBytes, index: newVectorIndex(cfg.Dims, cfg.VectorCopyBytes), sizes: &nsSizes{}, df: newTermDF(), speakers: newSpeakerSet()}
	defer func() {
		if err != nil {
			s.closeDBs()
		}
	}()
	if err := verify(ctx, w, true); err != nil {
		return nil, err
	}
	vecErr := errors.Join(vecAutoErr, probeVecModule(ctx, w))
	s.vecLoaded = vecErr == nil
	if err := checkDims(ctx, w, cfg.Dims); err != nil {
		return nil, err
	}
	if err := migrate(ctx, w, cfg.Dims, s.vecLoaded); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if err := checkDims(ctx, w, cfg.Dims); err != nil {
		return nil, err
	}
	if err := checkSpace(ctx, w, cfg.Space); err != nil {
		return nil, err
	}
	if _, err := reindexKeywords(ctx, w, cfg.OnReindex); err != nil { // segment_reindex.go
		return nil, fmt.Errorf("reindex keywords: %w", err)
	}
	if err := checkUnits(ctx, w); err != nil {
		return nil, err
	}
	// Readers connect after the writer has put the file in WAL mode.
	s.r = sqlOpen(dsn(path, "_query_only=true&"+common), cfg.MmapBytes)
	s.r.SetMaxOpenConns(cfg.ReadConns)
	s.r.SetMaxIdleConns(cfg.ReadConns)
	s.r.SetConnMaxLifetime(0)
	s.r.SetConnMaxIdleTime(0)
	if err := verify(ctx, s.r, false); err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	ckptParams := fmt.Sprintf("_busy_timeout=%d&_synchronous=NORMAL&_cache_size=-64&%s", busyTimeoutMS, noVecParam)
	if s.ckpt, err = startCheckpointer(path, ckptParams); err != nil {
		return nil, err
	}
	if err := s.setupVectors(ctx, cfg.NoSqliteVec, vecErr); err != nil {
		return nil, err
	}
	s.sids = map[SessionRef]int64{}
	if s.ws, err = prepareWriteStmts(ctx, w, s.vec.Load().plain()); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	seq, err := readAppliedSeq(ctx, s.r)
	if err != nil {
		return nil, err
	}
	s.applied.Store(seq)
	if err := s.sizes.load(ctx, s.r); err != nil {
		return nil, fmt.Errorf("load sizes: %w", err)
	}
	if err := s.speakers.load(ctx, s.r); err != nil {
		return nil, fmt.Errorf("load speakers: %w", err)
	}
	if err := s.loadIndex(ctx); err != nil {
		if s.vec.Load().plain() || errors.Is(err, ErrDims) || ctx.Err() != nil {
			return nil, fmt.Errorf("load vectors: %w", err)
		}
		// vec_chunks cannot be read: keep the vectors without it.
		if err := s.fallBackLocked(ctx, "vec0 table unreadable: "+err.Error()); err != nil {
			return nil, fmt.Errorf("load vectors: %w", err)
		}
	}
	// Last, so that nothing fails after it: a shard with Han text starts
	// loading the dictionary its searches need (segment_load.go).
	if s.han, err = startHanLoad(ctx, s.r); err != nil {
		return nil, err
	}
	// The keyword index: at once for a small shard, else in the background
	// (keyword_indexed.go); nothing fails after it starts.
	if err := s.loadKeywordIndex(ctx); err != nil {
		s.han.stop(ctx)
		return nil, err
	}
	return s, nil
}

// verify reads back the pragmas and probes FTS5 (sqlite-vec is probed
// apart: a shard runs without it, see VectorMode).
func verify(ctx context.Context, db *sql.DB, writer bool) error {
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q: %w", mode, ErrNotWAL)
	}
	var busy int
	if err := db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
		return fmt.Errorf("busy_timeout: %w", err)
	}
	if busy != busyTimeoutMS {
		return fmt.Errorf("busy_timeout is %d, want %d: %w", busy, busyTimeoutMS, ErrPragma)
	}
	var fk int
	if err := db.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil {
		return fmt.Errorf("foreign_keys: %w", err)
	}
	if fk != 1 {
		return fmt.Errorf("foreign_keys is %d: %w", fk, ErrPragma)
	}
	if writer {
		var sync int
		if err := db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
			return fmt.Errorf("synchronous: %w", err)
		}
		if sync != 1 { // NORMAL
			return fmt.Errorf("synchronous is %d, want 1 (NORMAL): %w", sync, ErrPragma)
		}
	}
	var fts string
	if err := db.QueryRowContext(ctx, `SELECT fts5_source_id()`).Scan(&fts); err != nil {
		return fmt.Errorf("%w: %v", ErrNoFTS5, err)
	}
	return nil
}

// checkDims fails with ErrDims when the file records another dimension. A
// file without a meta table yet (new) passes.
func checkDims(ctx context.Context, db *sql.DB, dims int) error {
	var n int
	if err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	var got int
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'dims'`).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read dims: %w", err)
	}
	if got != dims {
		return fmt.Errorf("file has dims %d, config %d: %w", got, dims, ErrDims)
	}
	return nil
}

// checkSpace records space in a file that has none and fails with ErrSpace
// when the file records another.
func checkSpace(ctx context.Context, db *sql.DB, space string) error {
	if space == "" {
		return nil
	}
	if _, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO meta(key, value) VALUES ('space', ?)`, space); err != nil {
		return fmt.Errorf("record vector space: %w", err)
	}
	var got string
	if err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'space'`).Scan(&got); err != nil {
		return fmt.Errorf("read vector space: %w", err)
	}
	if got != space {
		return fmt.Errorf("file holds vectors of %s, config %s: %w", got, space, ErrSpace)
	}
	return nil
}

// Path returns the file path the shard was opened with.
func (s *Shard) Path() string { return s.path }

// Dims returns the vector dimension of the shard.
func (s *Shard) Dims() int { return s.dims }

// Close waits for the write in progress, runs PRAGMA optimize (bounded by
// analysis_limit and ctx; best effort) and closes both connection pools,
// waiting for reads in progress. Later calls return ErrClosed.
func (s *Shard) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return fmt.Errorf("close shard: %w", ErrClosed)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.kwl.stop()              // started last by Open, stopped first
	hanErr := s.han.stop(ctx) // started before it
	var optErr error
	if !s.readOnly {
		_, optErr = s.w.ExecContext(ctx, `PRAGMA optimize`)
	}
	if errors.Is(optErr, context.Canceled) || errors.Is(optErr, context.DeadlineExceeded) {
		optErr = nil // optimize is best effort
	}
	err := errors.Join(hanErr, optErr, s.closeDBs())
	if err != nil {
		return fmt.Errorf("close shard: %w", err)
	}
	return nil
}

func (s *Shard) closeDBs() error {
	var errs []error
	errs = append(errs, s.ckpt.stop())
	if s.ws != nil {
		errs = append(errs, s.ws.close())
	}
	s.rx.finalize()
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

// check returns ErrClosed after Close.
func (s *Shard) check() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// ReadSpace returns the vector space and dimension recorded in the shard
// file at path without opening it for writing; "" and 0 when the file does
// not exist or records none.
func ReadSpace(ctx context.Context, path string) (space string, dims int, err error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return "", 0, nil
	}
	db, err := sql.Open(driverName, dsn(path, "mode=ro&_busy_timeout=5000"))
	if err != nil {
		return "", 0, fmt.Errorf("read space: %w", err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT key, value FROM meta WHERE key IN ('space', 'dims')`)
	if err != nil {
		return "", 0, fmt.Errorf("read space of %s: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v any
		if err := rows.Scan(&k, &v); err != nil {
			return "", 0, fmt.Errorf("read space of %s: %w", path, err)
		}
		switch k {
		case "space":
			space = fmt.Sprint(v)
		case "dims":
			if n, ok := v.(int64); ok {
				dims = int(n)
			}
		}
	}
	return space, dims, rows.Err()
}

// openReadOnly opens an existing shard file with Config.ReadOnly: both
// pools connect with mode=ro and query_only, and nothing is written. What a
// read-write Open would change (migrations, keyword re-index, the recorded
// space, vector repairs) is checked instead and reported with ErrReadOnly.
func openReadOnly(ctx context.Context, path string, cfg Config) (_ *Shard, err error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: %w: a read-only open never creates a file (%v)", path, ErrReadOnly, err)
	}
	params := fmt.Sprintf("mode=ro&_query_only=true&_busy_timeout=%d&_foreign_keys=on&_cache_size=-%d&_stmt_cache_size=32&_mutex=no", busyTimeoutMS, cfg.CacheKiB)
	if cfg.NoSqliteVec {
		params += "&" + noVecParam
	}
	pageBytes, _ := filePageBytes(path) // reported only; SQLite says what is wrong with the file
	s := &Shard{path: path, dims: cfg.Dims, readOnly: true, pageBytes: pageBytes, sids: map[SessionRef]int64{}, index: newVectorIndex(cfg.Dims, cfg.VectorCopyBytes), sizes: &nsSizes{}, df: newTermDF(), speakers: newSpeakerSet()}
	defer func() {
		if err != nil {
			s.closeDBs()
		}
	}()
	// w is a read-only connection too: the write methods fail on it.
	s.w = sqlOpen(dsn(path, params), cfg.MmapBytes)
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.r = sqlOpen(dsn(path, params), cfg.MmapBytes)
	s.r.SetMaxOpenConns(cfg.ReadConns)
	s.r.SetMaxIdleConns(cfg.ReadConns)
	s.r.SetConnMaxLifetime(0)
	s.r.SetConnMaxIdleTime(0)
	if err := verify(ctx, s.r, false); err != nil {
		return nil, err
	}
	vecErr := errors.Join(vecAutoErr, probeVecModule(ctx, s.r))
	s.vecLoaded = vecErr == nil
	if err := checkMigrated(ctx, s.r); err != nil {
		return nil, err
	}
	if err := checkDims(ctx, s.r, cfg.Dims); err != nil {
		return nil, err
	}
	var v string
	switch err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'space'`).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("read vector space: %w", err)
	case cfg.Space != "" && v != cfg.Space:
		return nil, fmt.Errorf("file holds vectors of %s, config %s: %w", v, cfg.Space, ErrSpace)
	}
	var tok int64
	if err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'tokenizer'`).Scan(&tok); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read tokenizer version: %w", err)
	}
	if tok != tokenizerVersion {
		return nil, fmt.Errorf("keyword index is of tokenizer version %d, this binary uses %d and would re-index it: %w", tok, tokenizerVersion, ErrReadOnly)
	}
	plain, err := vecPlainFlag(ctx, s.r)
	if err != nil {
		return nil, fmt.Errorf("read vector mode: %w", err)
	}
	switch {
	case plain:
		s.vec.Store(&vecState{mode: VectorModeGoScan, reason: "vectors kept without sqlite-vec by the writer"})
	case cfg.NoSqliteVec:
		s.vec.Store(&vecState{mode: VectorModeGoScan, reason: reasonDisabled})
	case vecErr != nil:
		s.vec.Store(&vecState{mode: VectorModeGoScan, reason: "sqlite-vec unavailable: " + vecErr.Error()})
	default:
		s.vec.Store(&vecState{mode: VectorModeSqliteVec})
	}
	// Prepared on the read-only connection, the write statements fail when
	// run: a write to this shard is an error, never a change.
	if s.ws, err = prepareWriteStmts(ctx, s.w, s.vec.Load().plain()); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := s.sizes.load(ctx, s.r); err != nil {
		return nil, fmt.Errorf("load sizes: %w", err)
	}
	if err := s.speakers.load(ctx, s.r); err != nil {
		return nil, fmt.Errorf("load speakers: %w", err)
	}
	if err := s.loadIndex(ctx); err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	if s.han, err = startHanLoad(ctx, s.r); err != nil { // last, as in open
		return nil, err
	}
	if err := s.loadKeywordIndex(ctx); err != nil {
		s.han.stop(ctx)
		return nil, err
	}
	return s, nil
}

// checkMigrated fails with ErrReadOnly when an embedded migration is not
// recorded in the file, and with ErrSchemaTooNew when the file records one
// this binary does not know.
func checkMigrated(ctx context.Context, db *sql.DB) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	applied := map[int]bool{}
	rows, err := db.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("read schema version: %w: not a shard file, or never opened read-write (%v)", ErrReadOnly, err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return err
		}
		applied[v] = true
		if len(ms) > 0 && v > ms[len(ms)-1].version {
			return fmt.Errorf("version %d: %w", v, ErrSchemaTooNew)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, m := range ms {
		if !applied[m.version] {
			return fmt.Errorf("migration %s is not applied: %w", m.name, ErrReadOnly)
		}
	}
	return nil
}

// checkUnits fails with ErrOldUnits when a session chunk spans more than one
// message (the windows of a memindex before message units). The scan runs
// once per file: a file that passes is marked in meta (message_units), and
// nothing this binary writes makes a window.
func checkUnits(ctx context.Context, db *sql.DB) error {
	var marked bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'message_units')`).Scan(&marked); err != nil {
		return fmt.Errorf("check session units: %w", err)
	}
	if marked {
		return nil
	}
	var old bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM chunks WHERE source = 'sessions' AND seq_end > seq_start)`).Scan(&old); err != nil {
		return fmt.Errorf("check session units: %w", err)
	}
	if old {
		return ErrOldUnits
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES ('message_units', 1)`); err != nil {
		return fmt.Errorf("check session units: %w", err)
	}
	return nil
}
