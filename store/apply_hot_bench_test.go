package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// BenchmarkApplyHotNamespace is the commit stage of one hot namespace
// (issue 13 item 3): b.N messages of one namespace interleaved over
// 1,000 sessions (message i is the next of session i%1000) applied from
// an empty shard in batches of each size up to what a worker behind
// makes (8,000 messages, its default MaxBatch since 27dba89): each
// session's new messages and the re-chunking of its tail, which keeps
// the open chunk and adds one chunk a message with its context and a
// 384-dim vector. It reports messages/s and the µs a message of each
// part of Apply: the messages stage, the rechunk stage (chunk rows,
// FTS5 rows, vectors), the commit, and the in-memory indexes after it;
// and the CPU time of the process a message (all its threads), which a
// loaded box inflates less than the wall time. Run it with
// -benchtime=100000x for the bench suite's size.
//
// Batches of 250 are what each of 16 partitions commits when the
// messages are spread over many namespaces; keys=agent names the
// sessions as agent platforms do (a tenant namespace, a routing session
// key, a UUID session id) instead of the short names of the bench
// suite.
func BenchmarkApplyHotNamespace(b *testing.B) {
	for _, per := range []int{250, 1000, 4000, 8000} {
		b.Run(fmt.Sprintf("batch=%d", per), func(b *testing.B) {
			benchmarkApplyHot(b, 1000, per, shortKeys)
		})
	}
	b.Run("batch=1000/keys=agent", func(b *testing.B) {
		benchmarkApplyHot(b, 1000, 1000, agentKeys)
	})
}

// shortKeys and agentKeys name session si of the hot namespace.
func shortKeys(si int) SessionRef {
	return SessionRef{Namespace: "hot", SessionKey: fmt.Sprintf("chat-%d", si), SessionID: "s1"}
}

func agentKeys(si int) SessionRef {
	sum := sha256.Sum256([]byte(fmt.Sprint(si)))
	h := hex.EncodeToString(sum[:16])
	return SessionRef{Namespace: "tenant-7f3a9c2e", SessionKey: fmt.Sprintf("agent:main:telegram:direct:%d", 5_000_000_000+si*7919),
		SessionID: h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]}
}

func benchmarkApplyHot(b *testing.B, sessions, per int, keys func(int) SessionRef) {
	ctx := context.Background()
	s := openTest(b, benchDims)
	batches := hotBatches(b.N, sessions, per, benchDims, keys)
	var stage [5]time.Duration // messages, rechunk, seq, commit, indexes
	var mark time.Time
	names := map[string]int{"messages": 0, "rechunk": 1, "seq": 2, "commit": 3, "indexes": 4}
	s.applyHook = func(name string) error {
		if i, ok := names[name]; ok {
			now := time.Now()
			stage[i] += now.Sub(mark)
			mark = now
		} else {
			mark = time.Now()
		}
		return nil
	}
	b.ReportAllocs()
	cpu0, flt0 := processUsage()
	b.ResetTimer()
	for i := range batches {
		mark = time.Now()
		if _, err := s.Apply(ctx, batches[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu, flt := processUsage()
	cpu, flt = cpu-cpu0, flt-flt0
	s.applyHook = nil
	b.ReportMetric(float64(flt)/float64(b.N), "faults/msg")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/msg")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	for name, i := range names {
		b.ReportMetric(float64(stage[i].Microseconds())/float64(b.N), name+"-µs/msg")
	}
}

// processUsage is the CPU time (user and system) of the process so far,
// which a loaded box inflates less than the wall time, and its minor page
// faults: first touches of fresh memory, about 10 µs each on a
// paravirtualised box (this project's: BENCHMARKS.md).
func processUsage() (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt
}

// hotBatches returns the batches of n messages over sessions interleaved
// sessions, per messages a batch, as the consumer plans them: each session's
// new messages, and its SessionChunks from its open (last) chunk on.
func hotBatches(n, sessions, per, dims int, keys func(int) SessionRef) []Batch {
	r := rand.New(rand.NewPCG(13, 3))
	type sess struct {
		msgs []Message
		last *Chunk // the open tail chunk
	}
	ss := make([]sess, sessions)
	var out []Batch
	for start := 0; start < n; start += per {
		bt := Batch{Seq: uint64(min(start+per, n))}
		touched := map[int]int{} // session → index in bt.Rechunk
		for i := start; i < min(start+per, n); i++ {
			si := i % sessions
			st := &ss[si]
			seq := int64(len(st.msgs) + 1)
			ts := t0.Add(time.Duration(i) * time.Second)
			ref := keys(si)
			ns := ref.Namespace
			m := Message{Namespace: ns, SessionKey: ref.SessionKey, SessionID: ref.SessionID, Seq: seq,
				ID: fmt.Sprintf("%s/s1/%d", ref.SessionKey, seq), Speaker: "Ana", Text: zipfText(r, 12+(i*7)%24), Time: ts}
			bt.Messages = append(bt.Messages, m)
			j, ok := touched[si]
			if !ok {
				j = len(bt.Rechunk)
				touched[si] = j
				sc := SessionChunks{Session: ref, From: 1}
				if st.last != nil {
					sc.From = st.last.SeqStart
					sc.Chunks = append(sc.Chunks, *st.last)
				}
				bt.Rechunk = append(bt.Rechunk, sc)
			}
			ctxt := ts.Format("2006-01-02")
			for k := max(0, len(st.msgs)-2); k < len(st.msgs); k++ {
				ctxt += "\n" + st.msgs[k].Speaker + ": " + st.msgs[k].Text
			}
			sum := sha256.Sum256([]byte(ref.SessionKey + "\x00" + m.Text + "\x00" + fmt.Sprint(seq)))
			c := Chunk{ID: hex.EncodeToString(sum[:16]), Namespace: ns, Source: "sessions", SessionKey: ref.SessionKey,
				SessionID: ref.SessionID, SeqStart: seq, SeqEnd: seq, Text: m.Speaker + ": " + m.Text, Context: ctxt,
				TimeStart: ts, TimeEnd: ts, Vector: randVec(r, dims)}
			bt.Rechunk[j].Chunks = append(bt.Rechunk[j].Chunks, c)
			st.msgs = append(st.msgs, m)
			st.last = &bt.Rechunk[j].Chunks[len(bt.Rechunk[j].Chunks)-1]
		}
		// The kept open chunk was the previous batch's; pointers into this
		// batch's slices stay valid once it is complete.
		for si := range touched {
			sc := &bt.Rechunk[touched[si]]
			c := sc.Chunks[len(sc.Chunks)-1]
			ss[si].last = &c
		}
		out = append(out, bt)
	}
	return out
}
