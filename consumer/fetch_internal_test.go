package consumer

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestNextWait: a batch waits BatchWait for its next event, pendingWait
// while the stream holds more for the consumer (BatchWait when that is
// longer), and never longer than the time left to collect it.
func TestNextWait(t *testing.T) {
	for _, tt := range []struct {
		name      string
		batchWait time.Duration
		pending   uint64
		left      time.Duration
		want      time.Duration
	}{
		{"nothing waits in the stream", 5 * time.Millisecond, 0, time.Minute, 5 * time.Millisecond},
		{"the stream holds more", 5 * time.Millisecond, 3, time.Minute, pendingWait},
		{"a BatchWait longer than pendingWait", time.Second, 3, time.Minute, time.Second},
		{"less time left than the wait", 5 * time.Millisecond, 3, 20 * time.Millisecond, 20 * time.Millisecond},
		{"no time left", 5 * time.Millisecond, 0, -time.Millisecond, -time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &Worker{cfg: Config{BatchWait: tt.batchWait}}
			if got := w.nextWait(&jetstream.MsgMetadata{NumPending: tt.pending}, tt.left); got != tt.want {
				t.Fatalf("nextWait(NumPending %d, left %v) = %v, want %v", tt.pending, tt.left, got, tt.want)
			}
		})
	}
}
