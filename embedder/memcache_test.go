package embedder

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestMemoryCacheLRU(t *testing.T) {
	ctx := context.Background()
	vec := []float32{1, 2, 3, 4}
	entry := int64(len("k1")) + 4*int64(len(vec)) + memEntryOverhead

	type op struct {
		put, get string // one of them
	}
	tests := []struct {
		name     string
		maxBytes int64
		ops      []op
		want     []string // keys held at the end
	}{
		{"fits", 3 * entry, []op{{put: "k1"}, {put: "k2"}, {put: "k3"}}, []string{"k1", "k2", "k3"}},
		{"evicts the oldest", 3 * entry, []op{{put: "k1"}, {put: "k2"}, {put: "k3"}, {put: "k4"}}, []string{"k2", "k3", "k4"}},
		{"a read refreshes", 3 * entry, []op{{put: "k1"}, {put: "k2"}, {put: "k3"}, {get: "k1"}, {put: "k4"}}, []string{"k1", "k3", "k4"}},
		{"a rewrite refreshes", 3 * entry, []op{{put: "k1"}, {put: "k2"}, {put: "k3"}, {put: "k1"}, {put: "k4"}}, []string{"k1", "k3", "k4"}},
		{"budget not a multiple", 3*entry - 1, []op{{put: "k1"}, {put: "k2"}, {put: "k3"}}, []string{"k2", "k3"}},
		{"entry over budget", entry - 1, []op{{put: "k1"}}, nil},
		{"zero budget", 0, []op{{put: "k1"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMemoryCache(tt.maxBytes)
			for _, o := range tt.ops {
				if o.put != "" {
					if err := m.PutMany(ctx, map[string][]float32{o.put: vec}); err != nil {
						t.Fatalf("PutMany(%s): %v", o.put, err)
					}
				} else if _, err := m.GetMany(ctx, []string{o.get}); err != nil {
					t.Fatalf("GetMany(%s): %v", o.get, err)
				}
			}
			got, err := m.GetMany(ctx, []string{"k1", "k2", "k3", "k4"})
			if err != nil {
				t.Fatalf("GetMany: %v", err)
			}
			var keys []string
			for k := range got {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tt.want) {
				t.Fatalf("held %v, want %v", keys, tt.want)
			}
			if m.Len() != len(tt.want) {
				t.Fatalf("Len()=%d, want %d", m.Len(), len(tt.want))
			}
			if got, want := m.Bytes(), int64(len(tt.want))*entry; got != want {
				t.Fatalf("Bytes()=%d, want %d", got, want)
			}
		})
	}
}

func TestMemoryCacheCopies(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryCache(1 << 20)
	v := []float32{1, 2}
	if err := m.PutMany(ctx, map[string][]float32{"k": v}); err != nil {
		t.Fatal(err)
	}
	v[0] = 9
	got, _ := m.GetMany(ctx, []string{"k"})
	if got["k"][0] != 1 {
		t.Fatalf("after changing the put vector: got %v, want 1", got["k"][0])
	}
	got["k"][0] = 9
	again, _ := m.GetMany(ctx, []string{"k"})
	if again["k"][0] != 1 {
		t.Fatalf("after changing the got vector: got %v, want 1", again["k"][0])
	}
}

func TestMemoryCacheConcurrent(t *testing.T) {
	ctx := context.Background()
	const entry = 8 + 4*8 + memEntryOverhead
	m := NewMemoryCache(50 * entry)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := fmt.Sprintf("k%03d-%02d", i%100, g%4)
				if err := m.PutMany(ctx, map[string][]float32{k: make([]float32, 8)}); err != nil {
					t.Error(err)
					return
				}
				if _, err := m.GetMany(ctx, []string{k}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if m.Bytes() > 50*entry || m.Len() > 50 {
		t.Fatalf("Bytes()=%d Len()=%d, want <= %d and <= 50", m.Bytes(), m.Len(), 50*entry)
	}
}
