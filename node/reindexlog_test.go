package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A re-index of many batches in quick succession logs its first batch and
// its end, not every batch; the end says how many chunks and how long.
func TestReindexProgressLogsSparingly(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	progress := reindexProgress(log, 7)
	const total = 200 * 500
	for done := int64(500); done <= total; done += 500 {
		progress(done, total)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("logged %d lines for 200 batches within a second, want 2 (first and end):\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "re-indexing keywords") || !strings.Contains(lines[0], "done=500 ") {
		t.Errorf("first line %q, want the first batch's progress", lines[0])
	}
	if !strings.Contains(lines[1], "re-indexed keywords") || !strings.Contains(lines[1], "chunks=100000") || !strings.Contains(lines[1], "seconds=") {
		t.Errorf("last line %q, want the end with chunks and seconds", lines[1])
	}
}
