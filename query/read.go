package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"memindex"
	"memindex/store"
)

// SessionReader is what a shard offers to read a session back; *store.Shard
// satisfies it.
type SessionReader interface {
	SessionMessages(ctx context.Context, ref store.SessionRef, fromSeq int64, limit int) ([]store.Message, error)
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
	if req.Path != "" {
		return readFile(ctx, s, req)
	}
	rd, ok := s.(SessionReader)
	if !ok {
		return memindex.ReadResponse{}, fmt.Errorf("read %s: %w", req.Namespace, errors.New("this shard cannot read sessions back"))
	}
	// One more than asked tells whether more follow.
	msgs, err := rd.SessionMessages(ctx, store.SessionRef{Namespace: req.Namespace, SessionKey: req.SessionKey, SessionID: req.SessionID}, req.From, req.Count+1)
	if err != nil {
		return memindex.ReadResponse{}, fmt.Errorf("read %s: %w", req.Namespace, err)
	}
	resp := memindex.ReadResponse{Type: "read.result", Version: 1, Namespace: req.Namespace,
		SessionKey: req.SessionKey, SessionID: req.SessionID, Messages: []memindex.ReadMessage{}}
	if len(msgs) > req.Count {
		msgs, resp.More = msgs[:req.Count], true
	}
	for _, m := range msgs {
		if m.Namespace != "" && m.Namespace != req.Namespace {
			continue // defence in depth: never another namespace's data
		}
		rm := memindex.ReadMessage{Seq: m.Seq, ID: m.ID, Role: m.Role, Speaker: m.Speaker, Text: m.Text}
		if !m.Time.IsZero() {
			rm.Timestamp = m.Time.UTC().Format(time.RFC3339)
		}
		resp.Messages = append(resp.Messages, rm)
	}
	return resp, nil
}

// FileReader is what a shard offers to read a memory file back;
// *store.Shard satisfies it.
type FileReader interface {
	FileContent(ctx context.Context, ns, path string) (string, bool, error)
}

func readFile(ctx context.Context, s Searcher, req memindex.ReadRequest) (memindex.ReadResponse, error) {
	fr, ok := s.(FileReader)
	if !ok {
		return memindex.ReadResponse{}, fmt.Errorf("read %s: this shard cannot read files back", req.Namespace)
	}
	content, found, err := fr.FileContent(ctx, req.Namespace, req.Path)
	if err != nil {
		return memindex.ReadResponse{}, fmt.Errorf("read %s: %w", req.Namespace, err)
	}
	if !found {
		return memindex.ReadResponse{}, fmt.Errorf("read %s: file %q: %w", req.Namespace, req.Path, ErrNotFound)
	}
	lines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(content, "\r\n", "\n"), "\n"), "\n")
	resp := memindex.ReadResponse{Type: "read.result", Version: 1, Namespace: req.Namespace, Path: req.Path, Messages: []memindex.ReadMessage{}, Lines: []string{}}
	from := int(req.From) - 1
	if from < len(lines) {
		end := min(len(lines), from+req.Count)
		resp.Lines = append(resp.Lines, lines[from:end]...)
		resp.More = end < len(lines)
	}
	return resp, nil
}
