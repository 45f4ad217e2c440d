package query

import (
	"context"
	"errors"
	"fmt"
	"time"

	"memindex"
	"memindex/store"
)

// SessionReader is what a shard offers to read a session back; *store.Shard
// satisfies it.
type SessionReader interface {
	SessionMessages(ctx context.Context, ref store.SessionRef, fromSeq int64) ([]store.Message, error)
}

// Read returns a session's messages from req.From on, at most req.Count,
// from the shard that owns the namespace. req is normalized inside; an
// invalid one gives an error wrapping memindex.ErrInvalid.
func (e *Engine) Read(ctx context.Context, req memindex.ReadRequest) (memindex.ReadResponse, error) {
	if err := req.Normalize(); err != nil {
		return memindex.ReadResponse{}, fmt.Errorf("invalid read request: %w", err)
	}
	s, _, err := e.router.Route(req.Namespace)
	if err != nil {
		return memindex.ReadResponse{}, fmt.Errorf("read %s: %w", req.Namespace, err)
	}
	rd, ok := s.(SessionReader)
	if !ok {
		return memindex.ReadResponse{}, fmt.Errorf("read %s: %w", req.Namespace, errors.New("this shard cannot read sessions back"))
	}
	msgs, err := rd.SessionMessages(ctx, store.SessionRef{Namespace: req.Namespace, SessionKey: req.SessionKey, SessionID: req.SessionID}, req.From)
	if err != nil {
		return memindex.ReadResponse{}, fmt.Errorf("read %s: %w", req.Namespace, err)
	}
	resp := memindex.ReadResponse{Type: "read.result", Version: 1, Namespace: req.Namespace,
		SessionKey: req.SessionKey, SessionID: req.SessionID, Messages: []memindex.ReadMessage{}}
	for i, m := range msgs {
		if m.Namespace != "" && m.Namespace != req.Namespace {
			continue // defence in depth: never another namespace's data
		}
		if i == req.Count {
			resp.More = true
			break
		}
		rm := memindex.ReadMessage{Seq: m.Seq, ID: m.ID, Role: m.Role, Speaker: m.Speaker, Text: m.Text}
		if !m.Time.IsZero() {
			rm.Timestamp = m.Time.UTC().Format(time.RFC3339)
		}
		resp.Messages = append(resp.Messages, rm)
	}
	return resp, nil
}
