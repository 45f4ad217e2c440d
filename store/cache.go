package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// touchEvery is how stale last_used may get before a read refreshes it, so
// that hot reads do not turn into a write each.
const touchEvery = time.Hour

// Cache is the embedding cache: one SQLite file (separate from the shards)
// mapping a key (the caller's hash of model and text) to a vector stored as a
// float32 little-endian BLOB, with created and last-used times. It is safe
// for concurrent use.
type Cache struct {
	path   string
	w      *sql.DB
	r      *sql.DB
	closed atomic.Bool
	now    func() time.Time
}

// OpenCache opens (creating if needed) the embedding cache file at path and
// verifies its pragmas (WAL, busy_timeout).
func OpenCache(ctx context.Context, path string) (*Cache, error) {
	c, err := openCache(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("open cache: %w", err)
	}
	return c, nil
}

func openCache(ctx context.Context, path string) (_ *Cache, err error) {
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("path %q: the cache needs a file: %w", path, ErrInvalidConfig)
	}
	registerDriver()
	common := fmt.Sprintf("_busy_timeout=%d&_synchronous=NORMAL&_foreign_keys=on&_stmt_cache_size=16", busyTimeoutMS)
	c := &Cache{path: path, now: time.Now}
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
	if _, err := c.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS embedding_cache (
		key       TEXT PRIMARY KEY,
		vec       BLOB NOT NULL,
		created   INTEGER NOT NULL,
		last_used INTEGER NOT NULL
	)`); err != nil {
		return nil, err
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

// Path returns the file path the cache was opened with.
func (c *Cache) Path() string { return c.path }

// GetMany returns the cached vectors among keys; missing keys are absent.
// Hits whose last-used time is older than an hour are touched.
func (c *Cache) GetMany(ctx context.Context, keys []string) (map[string][]float32, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("cache get: %w", ErrClosed)
	}
	out := make(map[string][]float32, len(keys))
	now := c.now().UnixNano()
	var stale []any
	for start := 0; start < len(keys); start += maxParams {
		batch := keys[start:min(start+maxParams, len(keys))]
		args := make([]any, len(batch))
		for i, k := range batch {
			args[i] = k
		}
		rows, err := c.r.QueryContext(ctx,
			`SELECT key, vec, last_used FROM embedding_cache WHERE key IN (`+placeholders(len(args))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("cache get: %w", err)
		}
		for rows.Next() {
			var k string
			var blob sql.RawBytes
			var used int64
			if err := rows.Scan(&k, &blob, &used); err != nil {
				rows.Close()
				return nil, fmt.Errorf("cache get: %w", err)
			}
			v, err := decodeVector(make([]float32, 0, len(blob)/4), blob)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("cache get %q: %w", k, err)
			}
			out[k] = v
			if now-used > int64(touchEvery) {
				stale = append(stale, k)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("cache get: %w", err)
		}
	}
	if len(stale) > 0 {
		if err := c.touch(ctx, now, stale); err != nil {
			return nil, fmt.Errorf("cache get: touch: %w", err)
		}
	}
	return out, nil
}

func (c *Cache) touch(ctx context.Context, now int64, keys []any) error {
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for start := 0; start < len(keys); start += maxParams {
		batch := keys[start:min(start+maxParams, len(keys))]
		args := append([]any{now}, batch...)
		if _, err := tx.ExecContext(ctx,
			`UPDATE embedding_cache SET last_used = ? WHERE key IN (`+placeholders(len(batch))+`)`, args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// PutMany stores entries in one transaction, replacing existing keys.
func (c *Cache) PutMany(ctx context.Context, entries map[string][]float32) error {
	if c.closed.Load() {
		return fmt.Errorf("cache put: %w", ErrClosed)
	}
	if len(entries) == 0 {
		return nil
	}
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cache put: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `INSERT INTO embedding_cache(key, vec, created, last_used) VALUES (?, ?, ?, ?)
		ON CONFLICT(key) DO UPDATE SET vec = excluded.vec, last_used = excluded.last_used`)
	if err != nil {
		return fmt.Errorf("cache put: %w", err)
	}
	defer st.Close()
	now := c.now().UnixNano()
	var buf []byte
	for k, v := range entries {
		buf = encodeVector(buf[:0], v)
		if _, err := st.ExecContext(ctx, k, buf, now, now); err != nil {
			return fmt.Errorf("cache put %q: %w", k, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cache put: %w", err)
	}
	return nil
}

// Close closes the cache file. Later calls return ErrClosed.
func (c *Cache) Close(ctx context.Context) error {
	if c.closed.Swap(true) {
		return fmt.Errorf("close cache: %w", ErrClosed)
	}
	if err := c.closeDBs(); err != nil {
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
