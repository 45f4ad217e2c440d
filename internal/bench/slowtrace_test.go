package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSlowTracerWritesSlowAnswers: off at 0; on, an answer faster than the
// bound writes nothing, a slower one the recorder's window (an execution
// trace), at most slowTraceMax of them.
func TestSlowTracerWritesSlowAnswers(t *testing.T) {
	dir := t.TempDir()
	if off, err := startSlowTracer(dir, 0, t.Logf); err != nil || off != nil {
		t.Fatalf("startSlowTracer(0) = %v, %v; want off", off, err)
	}
	var off *slowTracer
	if err := off.after("x", 1e9, searchAnswer{}); err != nil {
		t.Fatal(err)
	}
	off.stop()

	tr, err := startSlowTracer(dir, 5, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.stop()
	if err := tr.after("10-hybrid", 4.9, searchAnswer{worker: true}); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.trace")); len(files) != 0 {
		t.Fatalf("a fast answer wrote %v", files)
	}
	for range slowTraceMax + 2 {
		if err := tr.after("10-hybrid", 7, searchAnswer{worker: true, workerMs: 1}); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.trace"))
	if len(files) != slowTraceMax {
		t.Fatalf("%d slow answers wrote %d traces, want %d", slowTraceMax+2, len(files), slowTraceMax)
	}
	b, err := os.ReadFile(filepath.Join(dir, "slow-10-hybrid-1.trace"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Fatalf("slow-10-hybrid-1.trace starts %q, want an execution trace's header", b[:min(len(b), 16)])
	}
}
