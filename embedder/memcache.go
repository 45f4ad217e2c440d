package embedder

import (
	"container/list"
	"context"
	"sync"
)

// memEntryOverhead approximates the bytes a MemoryCache entry costs beyond
// its key and vector: the list element, the map entry and the headers.
const memEntryOverhead = 96

// MemoryCache is an in-process Cache that evicts the least recently used
// entries to stay within a byte budget. An entry costs its key, four bytes per
// dimension and a fixed overhead of about 96 bytes. It is safe for concurrent
// use; its methods ignore ctx, as they never block on I/O.
type MemoryCache struct {
	maxBytes int64

	mu    sync.Mutex
	lru   *list.List // of *memEntry, most recently used first
	items map[string]*list.Element
	bytes int64
}

type memEntry struct {
	key  string
	vec  []float32
	size int64
}

var _ Cache = (*MemoryCache)(nil)

// NewMemoryCache returns an empty cache holding at most maxBytes; with
// maxBytes <= 0 it holds nothing.
func NewMemoryCache(maxBytes int64) *MemoryCache {
	return &MemoryCache{maxBytes: maxBytes, lru: list.New(), items: make(map[string]*list.Element)}
}

// GetMany returns copies of the vectors held for keys and marks them as
// recently used. It never fails.
func (m *MemoryCache) GetMany(_ context.Context, keys []string) (map[string][]float32, error) {
	out := make(map[string][]float32, len(keys))
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		el, ok := m.items[k]
		if !ok {
			continue
		}
		m.lru.MoveToFront(el)
		out[k] = append([]float32(nil), el.Value.(*memEntry).vec...)
	}
	return out, nil
}

// PutMany stores copies of entries as the most recently used, replacing
// existing ones, then evicts the least recently used entries until the cache
// fits its budget. An entry larger than the whole budget is not stored. It
// never fails.
func (m *MemoryCache) PutMany(_ context.Context, entries map[string][]float32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range entries {
		size := int64(len(k)) + 4*int64(len(v)) + memEntryOverhead
		if el, ok := m.items[k]; ok {
			m.remove(el)
		}
		if size > m.maxBytes {
			continue
		}
		e := &memEntry{key: k, vec: append([]float32(nil), v...), size: size}
		m.items[k] = m.lru.PushFront(e)
		m.bytes += size
	}
	for m.bytes > m.maxBytes {
		m.remove(m.lru.Back())
	}
	return nil
}

func (m *MemoryCache) remove(el *list.Element) {
	e := m.lru.Remove(el).(*memEntry)
	delete(m.items, e.key)
	m.bytes -= e.size
}

// Len returns the number of entries.
func (m *MemoryCache) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lru.Len()
}

// Bytes returns the bytes the entries are accounted for, at most maxBytes.
func (m *MemoryCache) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}
