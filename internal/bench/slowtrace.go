package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/trace"
	"time"
)

// slowTraceMax bounds the traces one run writes.
const slowTraceMax = 3

// slowTracer keeps the last seconds of the process's execution trace (a
// flight recorder) while the search suite times memindex, and writes them
// to a file after an answer slower than ms at the client: what every
// goroutine of the bench process (client, NATS server, worker) did while
// that answer was late. At most slowTraceMax files.
type slowTracer struct {
	fr  *trace.FlightRecorder
	dir string
	ms  float64
	n   int
	log func(format string, a ...any)
}

// startSlowTracer starts the flight recorder; nil (off) when ms is 0.
func startSlowTracer(dir string, ms float64, log func(format string, a ...any)) (*slowTracer, error) {
	if ms <= 0 {
		return nil, nil
	}
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 2 * time.Second, MaxBytes: 64 << 20})
	if err := fr.Start(); err != nil {
		return nil, fmt.Errorf("slow-answer traces: %w", err)
	}
	return &slowTracer{fr: fr, dir: dir, ms: ms, log: log}, nil
}

// after notes an answer of what (a size and mode) that took clientMs at
// the client and a at the worker; a slow one has the recorder's window
// written to dir.
func (t *slowTracer) after(what string, clientMs float64, a searchAnswer) error {
	if t == nil || clientMs < t.ms || t.n >= slowTraceMax {
		return nil
	}
	var b bytes.Buffer
	if _, err := t.fr.WriteTo(&b); err != nil {
		return fmt.Errorf("slow-answer trace: %w", err)
	}
	t.n++
	path := filepath.Join(t.dir, fmt.Sprintf("slow-%s-%d.trace", what, t.n))
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("slow-answer trace: %w", err)
	}
	t.log("    wrote %s: %.2f ms at the client, %.2f in the worker (vector leg %.2f, keyword leg %.2f); the answer is the trace's last",
		path, clientMs, a.workerMs, a.vectorMs, a.keywordMs)
	return nil
}

// stop stops the recorder.
func (t *slowTracer) stop() {
	if t != nil {
		t.fr.Stop()
	}
}
