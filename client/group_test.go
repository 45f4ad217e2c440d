package client_test

import (
	"fmt"
	"slices"
	"testing"

	"memindex"
	"memindex/client"
)

// TestGrouperInterleavedSessions: messages of 2,000 sessions in time
// order, each message of another session than the one before, still go out
// in events of several messages: each event one session's, within the
// most messages an event, its seqs rising; every message once, each
// session's in order; the open runs never hold more than the window; and
// the same input makes the same events.
func TestGrouperInterleavedSessions(t *testing.T) {
	const sessions, each, max = 2000, 20, 100
	run := func() []string {
		var out []string
		added, emitted := 0, 0
		next := map[string]int64{} // each session's next seq to go out
		g := client.NewGrouper(max, func(ev memindex.Event, first int, n int) error {
			if held := added - emitted; held > client.GroupWindow+1 {
				t.Fatalf("open runs held %d messages, over the window of %d", held, client.GroupWindow)
			}
			msgs := ev.Messages
			if n == 1 {
				if ev.Type != memindex.TypeMessage {
					t.Fatalf("a run of one went out as %s", ev.Type)
				}
				msgs = []memindex.Message{{Seq: ev.Seq}}
			}
			if len(msgs) != n || n > max {
				t.Fatalf("an event of %d messages said %d (most %d)", len(msgs), n, max)
			}
			s := ev.SessionKey
			for _, m := range msgs {
				if m.Seq != next[s] {
					t.Fatalf("session %s: seq %d went out, want %d next", s, m.Seq, next[s])
				}
				next[s]++
			}
			if first != int(msgs[0].Seq) {
				t.Fatalf("session %s: tag %d, want the first message's, %d", s, first, msgs[0].Seq)
			}
			emitted += n
			out = append(out, fmt.Sprintf("%s:%d+%d", s, msgs[0].Seq, n))
			return nil
		})
		for seq := int64(1); seq <= each; seq++ {
			for s := range sessions {
				key := fmt.Sprintf("s%04d", s)
				if seq == 1 {
					next[key] = 1
				}
				added++
				if err := g.Add(memindex.Event{Type: memindex.TypeMessage, Namespace: "ns", SessionKey: key, SessionID: "x", Seq: seq, Text: "hello"}, int(seq)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := g.Flush(); err != nil {
			t.Fatal(err)
		}
		if emitted != sessions*each {
			t.Fatalf("%d messages went out, want %d", emitted, sessions*each)
		}
		for s, n := range next {
			if n != each+1 {
				t.Fatalf("session %s: %d messages went out, want %d", s, n-1, each)
			}
		}
		return out
	}
	first := run()
	// 2,000 sessions in a window of 16,384 messages: about 8 an event.
	if n := len(first); n > sessions*each/4 {
		t.Errorf("%d events for %d messages of interleaved sessions, want at most a quarter as many", n, sessions*each)
	}
	if again := run(); !slices.Equal(first, again) {
		t.Error("the same messages made other events the second time")
	}
}
