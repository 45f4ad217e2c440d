package consumer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"memindex"
	"memindex/store"
)

func TestRechunkFrom(t *testing.T) {
	spans := []store.ChunkSpan{{ID: "a", SeqStart: 1, SeqEnd: 10}, {ID: "b", SeqStart: 9, SeqEnd: 20}, {ID: "c", SeqStart: 18, SeqEnd: 25}}
	tests := []struct {
		name   string
		spans  []store.ChunkSpan
		minNew int64
		want   int64
	}{
		{"no chunks yet", nil, 5, 1},
		{"append after the tail", spans, 26, 18},
		{"rewrite inside the tail: the chunk ending before it may grow", spans, 24, 9},
		{"insert in the middle", spans, 15, 1},
		{"insert right after a chunk end", spans, 21, 9},
		{"insert before the first chunk", []store.ChunkSpan{{SeqStart: 5, SeqEnd: 9}}, 2, 2},
		{"split message parts share an end", []store.ChunkSpan{{SeqStart: 1, SeqEnd: 4}, {SeqStart: 5, SeqEnd: 5}, {SeqStart: 5, SeqEnd: 5, Part: 1}}, 6, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rechunkFrom(tt.spans, tt.minNew); got != tt.want {
				t.Fatalf("rechunkFrom(%d)=%d, want %d", tt.minNew, got, tt.want)
			}
		})
	}
}

func TestMergeMessages(t *testing.T) {
	mk := func(text string, seqs ...int64) []store.Message {
		var out []store.Message
		for _, s := range seqs {
			out = append(out, store.Message{Seq: s, Text: text})
		}
		return out
	}
	got := mergeMessages(mk("old", 1, 2, 4, 6), mk("new", 2, 3, 7))
	want := "1old 2new 3new 4old 6old 7new "
	var s string
	for _, m := range got {
		s += fmt.Sprintf("%d%s ", m.Seq, m.Text)
	}
	if s != want {
		t.Fatalf("mergeMessages()=%q, want %q", s, want)
	}
}

func TestPlannerDeleteThenAppend(t *testing.T) {
	p := newPlanner()
	msg := func(seq int64) memindex.Event {
		return memindex.Event{Type: memindex.TypeMessage, Namespace: "n", SessionKey: "k", SessionID: "s", Seq: seq, Text: "t", Timestamp: time.Now().Format(time.RFC3339)}
	}
	p.add(msg(1))
	p.add(msg(2))
	p.add(memindex.Event{Type: memindex.TypeSessionDeleted, Namespace: "n", SessionKey: "k"})
	p.add(msg(3))
	sp := p.sessions[store.SessionRef{Namespace: "n", SessionKey: "k", SessionID: "s"}]
	if !sp.reset || len(sp.msgs) != 1 || sp.msgs[3].Seq != 3 {
		t.Fatalf("after delete+append: reset=%v msgs=%v, want reset with only seq 3", sp.reset, sp.msgs)
	}
	if len(p.deletes) != 1 {
		t.Fatalf("deletes=%v, want 1", p.deletes)
	}
	// A session first seen after the deletion in the same batch is reset too.
	other := msg(1)
	other.SessionID = "s2"
	p.add(other)
	if sp := p.sessions[store.SessionRef{Namespace: "n", SessionKey: "k", SessionID: "s2"}]; !sp.reset {
		t.Fatal("a session first seen after its key was deleted in the batch is not marked reset: its stored messages would be re-chunked in")
	}
}

func TestGraceContext(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := graceContext(parent, 20*time.Millisecond)
	defer cancel()
	cancelParent()
	if ctx.Err() != nil {
		t.Fatal("graceContext ended with its parent, want it to last the grace period")
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("graceContext did not end after the grace period")
	}
}
