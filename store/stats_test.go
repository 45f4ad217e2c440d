package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestStatsCountsAsFullScans checks Stats' session and namespace counts,
// read through the sessions table, against scans of messages and chunks
// (what they counted before, at 1.6 s a status at 1M chunks) after each
// of a run of batches: messages of sessions in four namespaces, memory
// files and records (rows of chunks only, in a namespace with no
// messages too), and deletes of sessions, of whole session keys, of files
// and of records that empty sessions and namespaces.
func TestStatsCountsAsFullScans(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(21, 22))
	seqs := map[SessionRef]int64{}
	check := func(step int) {
		t.Helper()
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var sessions, namespaces int64
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT DISTINCT namespace, session_key, session_id FROM messages)`).Scan(&sessions); err != nil {
			t.Fatal(err)
		}
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT namespace FROM messages UNION SELECT namespace FROM chunks)`).Scan(&namespaces); err != nil {
			t.Fatal(err)
		}
		if st.Sessions != sessions || st.Namespaces != namespaces {
			t.Fatalf("step %d: Stats counts %d sessions and %d namespaces; the scans of messages and chunks %d and %d", step, st.Sessions, st.Namespaces, sessions, namespaces)
		}
	}
	check(0)
	ref := func() SessionRef {
		return SessionRef{Namespace: fmt.Sprintf("n%d", r.IntN(4)), SessionKey: fmt.Sprintf("k%d", r.IntN(3)), SessionID: fmt.Sprintf("s%d", r.IntN(4))}
	}
	for step := 1; step <= 60; step++ {
		b := Batch{Seq: uint64(step)}
		switch r.IntN(6) {
		case 0:
			b.DeleteSessions = []SessionRef{ref()}
		case 1:
			k := ref()
			k.SessionID = "" // every session of the key
			b.DeleteSessions = []SessionRef{k}
		case 2:
			ns := fmt.Sprintf("n%d", 2+r.IntN(3)) // n4 holds files and records only
			p := fmt.Sprintf("notes/%d.md", r.IntN(3))
			if r.IntN(2) == 0 {
				b.DeleteFiles = []FileRef{{Namespace: ns, Path: p}}
			} else {
				b.Files = []FileUpsert{{Namespace: ns, Path: p, Chunks: []Chunk{{ID: fmt.Sprintf("f-%d", step), Text: "a note about marmalade"}}}}
			}
		case 3:
			ns := fmt.Sprintf("n%d", 3+r.IntN(2))
			p := fmt.Sprintf("rec-%d", r.IntN(3))
			if r.IntN(2) == 0 {
				b.DeleteRecords = []FileRef{{Namespace: ns, Path: p}}
			} else {
				b.Records = []RecordUpsert{{Chunk: Chunk{ID: fmt.Sprintf("r-%d", step), Namespace: ns, Path: p, Text: "prefers tea"}}}
			}
		default:
			seen := map[SessionRef]bool{}
			for range 1 + r.IntN(4) {
				sr := ref()
				if seen[sr] { // one SessionChunks a session a batch, as the consumer plans
					continue
				}
				seen[sr] = true
				seqs[sr]++
				seq := seqs[sr]
				ts := t0.Add(time.Duration(step) * time.Minute)
				b.Messages = append(b.Messages, Message{Namespace: sr.Namespace, SessionKey: sr.SessionKey, SessionID: sr.SessionID,
					Seq: seq, ID: fmt.Sprintf("%v/%d", sr, seq), Speaker: "Ana", Text: "hello there", Time: ts})
				b.Rechunk = append(b.Rechunk, SessionChunks{Session: sr, From: seq, Chunks: []Chunk{{ID: fmt.Sprintf("c-%v-%d", sr, seq),
					Source: "sessions", SeqStart: seq, SeqEnd: seq, Text: "Ana: hello there", TimeStart: ts, TimeEnd: ts}}})
			}
		}
		mustApply(t, s, b)
		check(step)
	}
}
