package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenCloseWithoutRun: Close undoes Open of a node that never ran —
// the data lock is released, so another node opens the directory — and a
// second Close has nothing left to do.
func TestOpenCloseWithoutRun(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	n, err := Open(ctx, testConfig(dir), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if n.URL() == "" || n.Partitions() != 2 || n.Conn() == nil {
		t.Fatalf("opened node: URL %q, %d partitions, conn %v; want the embedded server's URL and 2", n.URL(), n.Partitions(), n.Conn())
	}
	if _, err := Open(ctx, testConfig(dir), nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second Open on the data directory = %v, want an in-use error", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.Close(cctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := n.Close(cctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	n2, err := Open(ctx, testConfig(dir), nil)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	stop := n2.Start(ctx)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := n2.Close(cctx); err != nil {
		t.Fatalf("Close after Run: %v", err)
	}
}

// TestOpenValidates: Open refuses an invalid configuration with Validate's
// error before it starts anything (the data directory is not created).
func TestOpenValidates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never")
	c := testConfig(dir)
	c.Batch = 0
	if _, err := Open(context.Background(), c, nil); err == nil || !strings.Contains(err.Error(), "--batch 0") {
		t.Fatalf("Open with --batch 0 = %v, want Validate's error naming --batch", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open with an invalid configuration created %s (%v)", dir, err)
	}
}
