package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"memindex"
	"memindex/client"
	"memindex/store"
)

// readShard is a memShard that can read sessions back from a slice.
type readShard struct {
	*memShard
	msgs []store.Message
}

func (r readShard) SessionMessages(_ context.Context, ref store.SessionRef, from int64, limit int) ([]store.Message, error) {
	var out []store.Message
	for _, m := range r.msgs {
		if m.Namespace == ref.Namespace && m.SessionKey == ref.SessionKey && m.SessionID == ref.SessionID && m.Seq >= from {
			out = append(out, m)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func TestServiceRead(t *testing.T) {
	sh := readShard{memShard: newTestShard()}
	for i := int64(1); i <= 30; i++ {
		sh.msgs = append(sh.msgs, store.Message{Namespace: "agent-7", SessionKey: "chat", SessionID: "s1", Seq: i, Speaker: "Ana", Text: fmt.Sprint("line ", i)})
	}
	nc, _ := setup(t, ServiceConfig{}, sh)
	cl := client.NewClient(nc)
	tests := []struct {
		name      string
		req       memindex.ReadRequest
		wantSeqs  []int64
		wantMore  bool
		wantErr   error
		wantField string
	}{
		{"defaults: from 1, 20 messages", memindex.ReadRequest{Namespace: "agent-7", SessionKey: "chat", SessionID: "s1"}, seqs(1, 20), true, nil, ""},
		{"a range", memindex.ReadRequest{Namespace: "agent-7", SessionKey: "chat", SessionID: "s1", From: 28, Count: 5}, seqs(28, 30), false, nil, ""},
		{"unknown session is empty", memindex.ReadRequest{Namespace: "agent-7", SessionKey: "other", SessionID: "s1"}, nil, false, nil, ""},
		{"count too big", memindex.ReadRequest{Namespace: "agent-7", SessionKey: "chat", SessionID: "s1", Count: 501}, nil, false, memindex.ErrInvalid, "count"},
		{"no session id", memindex.ReadRequest{Namespace: "agent-7", SessionKey: "chat"}, nil, false, memindex.ErrInvalid, "sessionId"},
		{"namespace not owned", memindex.ReadRequest{Namespace: "elsewhere", SessionKey: "chat", SessionID: "s1"}, nil, false, ErrNotOwned, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := cl.Read(ctxT(t), tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Read()=%v, want %v", err, tt.wantErr)
				}
				var re *client.RemoteError
				if tt.wantField != "" && (!errors.As(err, &re) || !strings.Contains(re.Message, tt.wantField)) {
					t.Fatalf("Read()=%v, want the message to name %q", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read()=%v", err)
			}
			var got []int64
			for _, m := range resp.Messages {
				got = append(got, m.Seq)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantSeqs) || resp.More != tt.wantMore {
				t.Fatalf("Read() seqs=%v more=%v, want %v more=%v", got, resp.More, tt.wantSeqs, tt.wantMore)
			}
		})
	}
}

func seqs(from, to int64) (out []int64) {
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}
