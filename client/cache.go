package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"memindex"
)

// CacheKey returns the key a Cache files cfg under: the sha256 of cfg's
// JSON with every object's keys sorted (a round trip through map[string]any),
// so two configurations that say the same thing share a key whatever order
// their keys came in. The values that are not data (Remote.Conn and
// Breaker.Now at every fallback level) enter by identity, Local.Opener by
// its type and %v form (query.Local names its embedder there).
func CacheKey(cfg Config) (string, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("cache key: %w", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("cache key: %w", err)
	}
	canon, err := json.Marshal(v) // encoding/json sorts map keys
	if err != nil {
		return "", fmt.Errorf("cache key: %w", err)
	}
	h := sha256.New()
	h.Write(canon)
	for c := &cfg; c != nil; c = c.Fallback {
		fmt.Fprintf(h, "|%p|%p|%T:%v", c.Remote.Conn, c.Breaker.Now, c.Local.Opener, c.Local.Opener)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Cache shares Managers among callers: Open with an equal configuration
// (see CacheKey) returns the same manager, opened once even by concurrent
// callers. A manager whose primary fails (an error that is not about the
// request, or an answer from its fallback) is evicted, so the next Open
// opens it afresh and tries the primary again; its current holders keep
// it until they Close. The zero Cache is not usable: use NewCache.
type Cache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
	closed  bool
}

type cacheEntry struct {
	key   string
	ready chan struct{} // closed once m or err is set
	m     Manager
	err   error
	refs  int
	// evicted: no longer in entries; closed when refs drops to zero.
	evicted bool
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{entries: map[string]*cacheEntry{}} }

// Open returns the cached manager for cfg, opening it on first need. Each
// returned Manager must be closed; Close releases this holder's share, and
// the manager itself closes when it is evicted and unheld, or at
// Cache.Close. An Open that fails is not cached.
func (c *Cache) Open(ctx context.Context, cfg Config) (Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	key, err := CacheKey(cfg)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("cache closed: %w", ErrNoBackend)
	}
	e, ok := c.entries[key]
	if !ok {
		e = &cacheEntry{key: key, ready: make(chan struct{})}
		c.entries[key] = e
	}
	e.refs++
	c.mu.Unlock()
	if !ok {
		e.m, e.err = Open(ctx, cfg)
		close(e.ready)
	} else {
		select {
		case <-e.ready:
		case <-ctx.Done():
			c.release(e)
			return nil, ctx.Err()
		}
	}
	if e.err != nil {
		c.evict(e)
		c.release(e)
		return nil, e.err
	}
	return &cached{c: c, e: e, Manager: e.m}, nil
}

// Len returns how many managers the cache holds (evicted ones excluded).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// evict takes e out of the cache: the next Open of its key opens anew.
func (c *Cache) evict(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	e.evicted = true
}

// release drops one holder of e and closes its manager when e is evicted
// and no one holds it any more.
func (c *Cache) release(e *cacheEntry) {
	c.mu.Lock()
	e.refs--
	closeIt := e.evicted && e.refs == 0 && e.m != nil
	c.mu.Unlock()
	if closeIt {
		e.m.Close(context.Background()) //nolint:errcheck // nobody left to tell
	}
}

// Close closes every cached manager, held or not, and refuses later Opens.
func (c *Cache) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	entries := c.entries
	c.entries = map[string]*cacheEntry{}
	c.mu.Unlock()
	var errs []error
	for _, e := range entries {
		<-e.ready
		if e.m != nil {
			errs = append(errs, e.m.Close(ctx))
		}
	}
	return errors.Join(errs...)
}

// cached is one holder's handle on a cached manager: it evicts the entry
// when the primary fails, and Close releases the holder's share.
type cached struct {
	Manager
	c    *Cache
	e    *cacheEntry
	once sync.Once
}

// observe evicts the entry when err, or a fallback's answer, says the
// primary failed.
func (h *cached) observe(ctx context.Context, err error, fb *memindex.FallbackInfo) {
	if fb != nil || err != nil && classify(ctx, err) == failed {
		h.c.evict(h.e)
	}
}

func (h *cached) Search(ctx context.Context, req memindex.SearchRequest) (memindex.SearchResponse, error) {
	resp, err := h.Manager.Search(ctx, req)
	h.observe(ctx, err, resp.Fallback)
	return resp, err
}

func (h *cached) Read(ctx context.Context, req memindex.ReadRequest) (memindex.ReadResponse, error) {
	resp, err := h.Manager.Read(ctx, req)
	h.observe(ctx, err, nil)
	return resp, err
}

func (h *cached) Status(ctx context.Context) ([]memindex.StatusResponse, error) {
	sts, err := h.Manager.Status(ctx)
	var fb *memindex.FallbackInfo
	if len(sts) > 0 {
		fb = sts[0].Fallback
	}
	h.observe(ctx, err, fb)
	return sts, err
}

// Close releases this holder's share; the manager stays cached for the
// next Open unless it was evicted.
func (h *cached) Close(context.Context) error {
	h.once.Do(func() { h.c.release(h.e) })
	return nil
}
