package client

import (
	"context"
	"errors"
	"strings"
	"testing"

	"memindex"
)

// TestNoneBackend: every call fails with ErrNoBackend.
func TestNoneBackend(t *testing.T) {
	ctx := context.Background()
	m, err := Open(ctx, Config{Backend: BackendNone})
	mustTB(t, err)
	if _, err := m.Search(ctx, memindex.SearchRequest{Namespace: "a", Query: "q"}); !errors.Is(err, ErrNoBackend) {
		t.Fatalf("Search()=%v, want ErrNoBackend", err)
	}
	if _, err := m.Status(ctx); !errors.Is(err, ErrNoBackend) {
		t.Fatalf("Status()=%v, want ErrNoBackend", err)
	}
	if err := m.ProbeVectors(ctx); !errors.Is(err, ErrNoBackend) {
		t.Fatalf("ProbeVectors()=%v, want ErrNoBackend", err)
	}
	if _, err := Open(ctx, Config{}); err == nil || !strings.Contains(err.Error(), "backend is required") {
		t.Fatalf("Open(no backend)=%v, want an error naming backend", err)
	}
}

// TestLocalNeedsOpener: the local backend is not compiled into this
// package; a configuration of it without an Opener says where to get one.
func TestLocalNeedsOpener(t *testing.T) {
	_, err := Open(context.Background(), Config{Backend: BackendLocal, Local: LocalConfig{Path: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "query.Local") {
		t.Fatalf("Open(local without Opener)=%v, want an error naming query.Local", err)
	}
}
