package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// touchFlushKeys and touchFlushEvery bound how many hits, and for how
	// long, recency lives only in memory before a read writes it down; a
	// PutMany and Close write it down anyway. Hot reads thus cost at most one
	// write a batch of hits, not one write each.
	touchFlushKeys  = 1024
	touchFlushEvery = time.Minute
	// evictBatch is how many least recently used rows one eviction step reads.
	evictBatch = 256
)

// CacheConfig is the declarative configuration of the embedding cache.
type CacheConfig struct {
	// MaxBytes bounds the bytes of keys and vectors the cache holds (the
	// file is larger: SQLite pages, the recency index, the WAL). When a
	// PutMany takes the total past it, the least recently used entries are
	// evicted in the same transaction until the total is at most 90% of it;
	// an entry larger than MaxBytes on its own is not stored. 0 means
	// unbounded.
	MaxBytes int64
}

// Validate reports whether the configuration is usable.
func (c CacheConfig) Validate() error {
	if c.MaxBytes < 0 {
		return fmt.Errorf("max bytes %d: %w", c.MaxBytes, ErrInvalidConfig)
	}
	return nil
}

// CacheStats describes the embedding cache at one instant.
type CacheStats struct {
	// Entries is the number of cached vectors.
	Entries int64
	// Bytes is the sum of their key and vector (BLOB) lengths.
	Bytes int64
	// MaxBytes is the configured bound; 0 means unbounded.
	MaxBytes int64
	// Evictions counts entries evicted since the cache was opened.
	Evictions uint64
}

// Cache is the embedding cache: one SQLite file (separate from the shards)
// mapping a key (the caller's hash of model and text) to a vector stored as a
// float32 little-endian BLOB, with created and last-used times. It can be
// bounded in bytes (CacheConfig), evicting the least recently used entries.
// It is safe for concurrent use.
//
// The byte total is kept in memory: read once at open, then moved by each
// committed PutMany. Recency is precise to the call: a GetMany records its
// hits in memory, and the next PutMany writes them down before it evicts, so
// eviction sees every read that returned before the PutMany started. Reads
// also write recorded hits down themselves, at most once a minute or 1024
// keys, when no write is in progress; a crash loses only those not yet
// written, which makes their entries look older than they are.
type Cache struct {
	path     string
	w        *sql.DB
	r        *sql.DB
	closed   atomic.Bool
	now      func() time.Time
	maxBytes int64

	// wmu serialises the transactions of the writer connection (PutMany,
	// hit flushes, eviction at open), so that the byte total moves in the
	// order of the commits.
	wmu sync.Mutex

	mu        sync.Mutex       // guards the fields below
	touched   map[string]int64 // key → stamp of its latest hit not yet written
	touchedAt time.Time        // when the oldest unwritten hit was recorded
	lastStamp int64            // the latest stamp handed out

	statsMu   sync.Mutex // guards the fields below; changed under wmu
	entries   int64
	bytes     int64
	evictions uint64
}

// OpenCache opens (creating if needed) the unbounded embedding cache file at
// path and verifies its pragmas (WAL, busy_timeout). It is OpenCacheWith with
// the zero CacheConfig.
func OpenCache(ctx context.Context, path string) (*Cache, error) {
	return OpenCacheWith(ctx, path, CacheConfig{})
}

// OpenCacheWith opens (creating if needed) the embedding cache file at path
// with cfg, verifies its pragmas (WAL, busy_timeout) and reads the byte
// total. A file already over cfg.MaxBytes (the bound was lowered) is evicted
// down to it before OpenCacheWith returns.
func OpenCacheWith(ctx context.Context, path string, cfg CacheConfig) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open cache: %w", err)
	}
	c, err := openCache(ctx, path, cfg)
	if err != nil {
		return nil, fmt.Errorf("open cache: %w", err)
	}
	return c, nil
}

func openCache(ctx context.Context, path string, cfg CacheConfig) (_ *Cache, err error) {
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("path %q: the cache needs a file: %w", path, ErrInvalidConfig)
	}
	registerDriver()
	common := fmt.Sprintf("_busy_timeout=%d&_synchronous=NORMAL&_foreign_keys=on&_stmt_cache_size=16&_mutex=no", busyTimeoutMS)
	c := &Cache{path: path, now: time.Now, maxBytes: cfg.MaxBytes, touched: map[string]int64{}}
	if c.w, err = sql.Open(driverName, dsn(path, "_journal_mode=WAL&_txlock=immediate&"+common)); err != nil {
		return nil, err
	}
	c.w.SetMaxOpenConns(1)
	defer func() {
		if err != nil {
			c.closeDBs()
		}
	}()
	if err := verify(ctx, c.w, true); err != nil {
		return nil, err
	}
	// The cache file has no migrations table: its schema is these idempotent
	// statements (the recency index came later; an older file gains it here).
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS embedding_cache (
			key       TEXT PRIMARY KEY,
			vec       BLOB NOT NULL,
			created   INTEGER NOT NULL,
			last_used INTEGER NOT NULL
		)`,
		`CREATE INDEX IF NOT EXISTS embedding_cache_lru ON embedding_cache(last_used, created)`,
	} {
		if _, err := c.w.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	// length() of a BLOB reads only the record header, so this scans the
	// table without reading the vectors.
	if err := c.w.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(`+entrySize+`), 0),
		COALESCE(MAX(last_used), 0) FROM embedding_cache`).Scan(&c.entries, &c.bytes, &c.lastStamp); err != nil {
		return nil, fmt.Errorf("size: %w", err)
	}
	if c.maxBytes > 0 && c.bytes > c.maxBytes {
		if err := c.evictAtOpen(ctx); err != nil {
			return nil, fmt.Errorf("evict: %w", err)
		}
	}
	if c.r, err = sql.Open(driverName, dsn(path, "_query_only=true&"+common)); err != nil {
		return nil, err
	}
	c.r.SetMaxOpenConns(defaultReadConns)
	if err := verify(ctx, c.r, false); err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	return c, nil
}

// entrySize is the SQL expression of a row's size in bytes: octet_length,
// because length() of TEXT counts characters.
const entrySize = `octet_length(key) + length(vec)`

// Path returns the file path the cache was opened with.
func (c *Cache) Path() string { return c.path }

// GetMany returns the cached vectors among keys; missing keys are absent.
// Hits become the most recently used entries.
func (c *Cache) GetMany(ctx context.Context, keys []string) (map[string][]float32, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("cache get: %w", ErrClosed)
	}
	out := make(map[string][]float32, len(keys))
	for start := 0; start < len(keys); start += maxParams {
		batch := keys[start:min(start+maxParams, len(keys))]
		args := make([]any, len(batch))
		for i, k := range batch {
			args[i] = k
		}
		rows, err := c.r.QueryContext(ctx,
			`SELECT key, vec FROM embedding_cache WHERE key IN (`+placeholders(len(args))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("cache get: %w", err)
		}
		for rows.Next() {
			var k string
			var blob sql.RawBytes
			if err := rows.Scan(&k, &blob); err != nil {
				rows.Close()
				return nil, fmt.Errorf("cache get: %w", err)
			}
			v, err := decodeVector(make([]float32, 0, len(blob)/4), blob)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("cache get %q: %w", k, err)
			}
			out[k] = v
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("cache get: %w", err)
		}
	}
	if len(out) > 0 && c.recordHits(out) {
		c.flushIfIdle(ctx)
	}
	return out, nil
}

// stamp returns a recency stamp: the clock in nanoseconds, but always
// greater than the previous stamp, so that calls order exactly even when the
// clock is coarse or steps back. c.mu must be held.
func (c *Cache) stamp() int64 {
	s := c.now().UnixNano()
	if s <= c.lastStamp {
		s = c.lastStamp + 1
	}
	c.lastStamp = s
	return s
}

// recordHits records hits as used now and reports whether the recorded hits
// are due to be written down.
func (c *Cache) recordHits(hits map[string][]float32) (due bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stamp()
	if len(c.touched) == 0 {
		c.touchedAt = c.now()
	}
	for k := range hits {
		c.touched[k] = s
	}
	return len(c.touched) >= touchFlushKeys || c.now().Sub(c.touchedAt) >= touchFlushEvery
}

// takeTouched returns the recorded hits and forgets them.
func (c *Cache) takeTouched() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.touched) == 0 {
		return nil
	}
	t := c.touched
	c.touched = map[string]int64{}
	return t
}

// restoreTouched gives back hits taken by a transaction that did not commit,
// keeping the later stamp of a key hit again meanwhile.
func (c *Cache) restoreTouched(t map[string]int64) {
	if len(t) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.touched) == 0 {
		c.touchedAt = c.now()
	}
	for k, s := range t {
		if s > c.touched[k] {
			c.touched[k] = s
		}
	}
}

// flushIfIdle writes the recorded hits down unless a write is in progress
// (which will, or the next PutMany will). A failure keeps the hits for the
// next attempt: the read that triggered it has succeeded, and a PutMany that
// cannot write them down fails and reports why.
func (c *Cache) flushIfIdle(ctx context.Context) {
	if !c.wmu.TryLock() {
		return
	}
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return
	}
	_ = c.flush(ctx)
}

// flush writes the recorded hits down in a transaction of their own. c.wmu
// must be held.
func (c *Cache) flush(ctx context.Context) error {
	touched := c.takeTouched()
	if len(touched) == 0 {
		return nil
	}
	err := func() error {
		tx, err := c.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := writeTouched(ctx, tx, touched); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if err != nil {
		c.restoreTouched(touched)
	}
	return err
}

// writeTouched moves the last-used time of the hit keys forward to their
// stamps; a key evicted or replaced meanwhile is left as it is.
func writeTouched(ctx context.Context, tx *sql.Tx, touched map[string]int64) error {
	if len(touched) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, `UPDATE embedding_cache SET last_used = max(last_used, ?) WHERE key = ?`)
	if err != nil {
		return err
	}
	defer st.Close()
	for k, s := range touched {
		if _, err := st.ExecContext(ctx, s, k); err != nil {
			return err
		}
	}
	return nil
}

// PutMany stores entries in one transaction as the most recently used,
// replacing existing keys. In the same transaction it writes down the hits of
// earlier reads and, if the cache is bounded and the total went past
// MaxBytes, evicts the least recently used entries (by last use, then
// creation) until the total is at most 90% of MaxBytes. An entry larger than
// MaxBytes on its own is not stored (and an older value of its key is
// removed).
func (c *Cache) PutMany(ctx context.Context, entries map[string][]float32) error {
	if c.closed.Load() {
		return fmt.Errorf("cache put: %w", ErrClosed)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return fmt.Errorf("cache put: %w", ErrClosed)
	}
	touched := c.takeTouched()
	if len(entries) == 0 && len(touched) == 0 {
		return nil
	}
	d, err := c.put(ctx, touched, entries)
	if err != nil {
		c.restoreTouched(touched)
		return fmt.Errorf("cache put: %w", err)
	}
	c.applyDelta(d)
	return nil
}

// delta is how a committed transaction moved the cache's totals.
type delta struct {
	entries, bytes int64
	evictions      uint64
}

func (c *Cache) applyDelta(d delta) {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	c.entries += d.entries
	c.bytes += d.bytes
	c.evictions += d.evictions
}

// put runs PutMany's transaction and returns how it moved the totals. c.wmu
// must be held.
func (c *Cache) put(ctx context.Context, touched map[string]int64, entries map[string][]float32) (delta, error) {
	var d delta
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return d, err
	}
	defer tx.Rollback()
	if err := writeTouched(ctx, tx, touched); err != nil {
		return d, fmt.Errorf("touch: %w", err)
	}
	if len(entries) > 0 {
		if err := c.upsert(ctx, tx, entries, &d); err != nil {
			return d, err
		}
	}
	if total := c.bytes + d.bytes; c.maxBytes > 0 && total > c.maxBytes {
		n, freed, err := evictLRU(ctx, tx, total-lowWater(c.maxBytes))
		if err != nil {
			return d, fmt.Errorf("evict: %w", err)
		}
		d.entries -= n
		d.bytes -= freed
		d.evictions += uint64(n)
	}
	return d, tx.Commit()
}

// upsert writes entries, adding to d what they change in the totals.
func (c *Cache) upsert(ctx context.Context, tx *sql.Tx, entries map[string][]float32, d *delta) error {
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	old, err := sizesOf(ctx, tx, keys)
	if err != nil {
		return fmt.Errorf("sizes: %w", err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO embedding_cache(key, vec, created, last_used) VALUES (?, ?, ?, ?)
		ON CONFLICT(key) DO UPDATE SET vec = excluded.vec, last_used = excluded.last_used`)
	if err != nil {
		return err
	}
	defer ins.Close()
	c.mu.Lock()
	now := c.stamp()
	c.mu.Unlock()
	var buf []byte
	for _, k := range keys {
		v := entries[k]
		size := int64(len(k)) + 4*int64(len(v))
		prev, had := old[k]
		if c.maxBytes > 0 && size > c.maxBytes {
			if had {
				if _, err := tx.ExecContext(ctx, `DELETE FROM embedding_cache WHERE key = ?`, k); err != nil {
					return fmt.Errorf("drop %q: %w", k, err)
				}
				d.entries--
				d.bytes -= prev
			}
			continue
		}
		buf = encodeVector(buf[:0], v)
		if _, err := ins.ExecContext(ctx, k, buf, now, now); err != nil {
			return fmt.Errorf("put %q: %w", k, err)
		}
		if !had {
			d.entries++
		}
		d.bytes += size - prev
	}
	return nil
}

// sizesOf returns the stored sizes of those of keys that are stored.
func sizesOf(ctx context.Context, tx *sql.Tx, keys []string) (map[string]int64, error) {
	out := make(map[string]int64)
	for start := 0; start < len(keys); start += maxParams {
		batch := keys[start:min(start+maxParams, len(keys))]
		args := make([]any, len(batch))
		for i, k := range batch {
			args[i] = k
		}
		rows, err := tx.QueryContext(ctx,
			`SELECT key, `+entrySize+` FROM embedding_cache WHERE key IN (`+placeholders(len(args))+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k string
			var n int64
			if err := rows.Scan(&k, &n); err != nil {
				rows.Close()
				return nil, err
			}
			out[k] = n
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lowWater is the total an eviction brings the cache down to: 90% of
// maxBytes, so that the next few puts do not each evict again.
func lowWater(maxBytes int64) int64 { return maxBytes - maxBytes/10 }

// evictLRU deletes the least recently used rows (by last_used, then created)
// until at least need bytes are freed or the table is empty, and returns how
// many rows and bytes it deleted.
func evictLRU(ctx context.Context, tx *sql.Tx, need int64) (n, freed int64, err error) {
	for freed < need {
		rows, err := tx.QueryContext(ctx, `SELECT key, `+entrySize+` FROM embedding_cache
			ORDER BY last_used, created LIMIT ?`, evictBatch)
		if err != nil {
			return n, freed, err
		}
		var victims []any
		for rows.Next() && freed < need {
			var k string
			var size int64
			if err := rows.Scan(&k, &size); err != nil {
				rows.Close()
				return n, freed, err
			}
			victims = append(victims, k)
			freed += size
		}
		if err := rows.Close(); err != nil {
			return n, freed, err
		}
		if len(victims) == 0 {
			break
		}
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM embedding_cache WHERE key IN (`+placeholders(len(victims))+`)`, victims...); err != nil {
			return n, freed, err
		}
		n += int64(len(victims))
	}
	return n, freed, nil
}

// evictAtOpen brings a file opened with a lower bound than it was filled to
// down to the low-water mark.
func (c *Cache) evictAtOpen(ctx context.Context) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	n, freed, err := evictLRU(ctx, tx, c.bytes-lowWater(c.maxBytes))
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	c.applyDelta(delta{entries: -n, bytes: -freed, evictions: uint64(n)})
	return nil
}

// Stats returns the number of entries, their bytes, the bound and the
// evictions since open. It reads the totals kept in memory, so it costs no
// query; it fails only after Close (ErrClosed).
func (c *Cache) Stats(ctx context.Context) (CacheStats, error) {
	if c.closed.Load() {
		return CacheStats{}, fmt.Errorf("cache stats: %w", ErrClosed)
	}
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	return CacheStats{Entries: c.entries, Bytes: c.bytes, MaxBytes: c.maxBytes, Evictions: c.evictions}, nil
}

// Close writes down the recency of hits not yet written, then closes the
// cache file; it waits for a PutMany in progress. If the write-down fails
// (ctx ended), the file is closed all the same and the error returned: those
// entries only look older than they are. Later calls return ErrClosed.
func (c *Cache) Close(ctx context.Context) error {
	if c.closed.Swap(true) {
		return fmt.Errorf("close cache: %w", ErrClosed)
	}
	c.wmu.Lock()
	ferr := c.flush(ctx)
	c.wmu.Unlock()
	if ferr != nil {
		ferr = fmt.Errorf("touch: %w", ferr)
	}
	if err := errors.Join(ferr, c.closeDBs()); err != nil {
		return fmt.Errorf("close cache: %w", err)
	}
	return nil
}

func (c *Cache) closeDBs() error {
	var errs []error
	for _, db := range []*sql.DB{c.r, c.w} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}
