package chunker

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func BenchmarkSession(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) { benchmarkSession(b, n) })
	}
}

// benchmarkSession chunks a session of n chat messages of 20-30 words with
// the default config.
func benchmarkSession(b *testing.B, n int) {
	r := rand.New(rand.NewPCG(1, 2))
	ms := make([]Message, n)
	var bytes int64
	for i := range ms {
		ms[i] = Message{
			Seq:     int64(i + 1),
			Speaker: []string{"Caroline", "Melanie"}[i%2],
			Role:    "user",
			Text:    chatText(r, 20+r.IntN(11)),
			Time:    t0.Add(time.Duration(i) * time.Minute),
		}
		bytes += int64(len(ms[i].Text))
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	var chunks int
	for b.Loop() {
		chunks = len(Session(Config{}, "ns\x00key\x00id", ms))
	}
	b.ReportMetric(float64(chunks), "chunks/op")
}
