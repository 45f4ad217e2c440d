package main

import (
	"bytes"
	"strings"
	"testing"

	"memindex/node"
)

// TestRebuildBar draws rebuild's terminal progress into a buffer: a bar per
// partition with its chunks and vectors waiting, cleared before the
// partition's summary line, which ends the output.
func TestRebuildBar(t *testing.T) {
	var buf bytes.Buffer
	r := &rebuildProgress{w: &buf, tty: true}
	ev := node.RebuildEvent{Type: "rebuild.progress", Partition: 3, FirstSeq: 100, TargetSeq: 300}
	for _, applied := range []uint64{100, 200, 300} {
		ev.AppliedSeq, ev.Chunks, ev.VectorsWaiting = applied, int64(applied-100), 7
		r.show(ev)
	}
	bars := buf.String()
	for _, want := range []string{"partition 3: 200 chunks, 7 waiting for vectors", "100%", "200/200"} {
		if !strings.Contains(bars, want) {
			t.Errorf("the bar %q does not show %q", bars, want)
		}
	}
	ev.Type, ev.Seconds = "rebuild.done", 1.5
	r.show(ev)
	out := buf.String()
	last := out[strings.LastIndexAny(strings.TrimSuffix(out, "\n"), "\r\n")+1:]
	if want := "partition 3: rebuilt from the stream: stream sequence 300, 200 chunks, in 1.5s\n"; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
}
