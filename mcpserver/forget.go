package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"memindex"
)

// ForgetInput is the arguments of memory_forget: a record, or a session
// (or every session of a channel).
type ForgetInput struct {
	Namespace  string `json:"namespace,omitempty" jsonschema:"the memory namespace to use; leave it out for the server's own (other namespaces only when the server allows them)"`
	RecordID   string `json:"recordId,omitempty" jsonschema:"the record to remove: the recordId memory_add or a memory_search hit gave"`
	SessionKey string `json:"sessionKey,omitempty" jsonschema:"remove a conversation instead of a record: the session sessionId of this channel, or without sessionId every session of the channel"`
	SessionID  string `json:"sessionId,omitempty" jsonschema:"the session of the channel to remove (with sessionKey)"`
}

// ForgetOutput is the result of memory_forget.
type ForgetOutput struct {
	Namespace  string `json:"namespace"`
	Forgot     string `json:"forgot" jsonschema:"what was removed: record, session, or sessions (every session of the channel)"`
	RecordID   string `json:"recordId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	Seq        uint64 `json:"seq" jsonschema:"the event's sequence in the memindex stream"`
	Applied    bool   `json:"applied" jsonschema:"the workers applied the removal before the call returned: memory_search no longer finds it"`
	Note       string `json:"note,omitempty" jsonschema:"what else to know, e.g. that the workers had not applied it yet"`
}

func (s *Server) addForget() {
	addTool(s, &mcp.Tool{
		Name:  "memory_forget",
		Title: "Remove from memory",
		Description: "Remove from long-term memory either a record (give recordId) or a conversation (give sessionKey and sessionId; " +
			"sessionKey alone removes every session of that channel). Removing what is not there does nothing. " +
			"The call waits a few seconds for the workers to apply it, and says in applied whether they did.",
		InputSchema: inputSchema[ForgetInput](nil),
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(true), OpenWorldHint: new(false)},
	}, s.forget)
}

// forget publishes a record.deleted or session.deleted event and waits for
// it as memory_add does (its timestamp, ignored by the workers, makes each
// call's event unique).
func (s *Server) forget(ctx context.Context, in ForgetInput) (string, ForgetOutput, error) {
	ns, err := s.namespace(in.Namespace)
	if err != nil {
		return "", ForgetOutput{}, err
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	out := ForgetOutput{Namespace: ns, RecordID: in.RecordID, SessionKey: in.SessionKey, SessionID: in.SessionID}
	var ev memindex.Event
	var what string
	switch {
	case in.RecordID != "" && (in.SessionKey != "" || in.SessionID != ""):
		return "", ForgetOutput{}, &memindex.FieldError{Field: "recordId", Reason: "give either recordId (a record) or sessionKey and sessionId (a conversation), not both", Err: memindex.ErrInvalid}
	case in.RecordID != "":
		ev = memindex.Event{Type: memindex.TypeRecordDeleted, Namespace: ns, ID: in.RecordID, Timestamp: now}
		out.Forgot, what = "record", "record "+in.RecordID
	case in.SessionKey != "" && in.SessionID != "":
		ev = memindex.Event{Type: memindex.TypeSessionDeleted, Namespace: ns, SessionKey: in.SessionKey, SessionID: in.SessionID, Timestamp: now}
		out.Forgot, what = "session", fmt.Sprintf("session sessionKey %s sessionId %s", in.SessionKey, in.SessionID)
	case in.SessionKey != "":
		ev = memindex.Event{Type: memindex.TypeSessionDeleted, Namespace: ns, SessionKey: in.SessionKey, Timestamp: now}
		out.Forgot, what = "sessions", "every session of sessionKey "+in.SessionKey
	case in.SessionID != "":
		return "", ForgetOutput{}, &memindex.FieldError{Field: "sessionKey", Reason: "is required with sessionId", Err: memindex.ErrInvalid}
	default:
		return "", ForgetOutput{}, &memindex.FieldError{Field: "recordId", Reason: "give recordId (a record) or sessionKey and sessionId (a conversation)", Err: memindex.ErrInvalid}
	}
	out.Seq, out.Applied, out.Note, err = s.publish(ctx, ev)
	if err != nil {
		return "", ForgetOutput{}, err
	}
	text := fmt.Sprintf("Removed %s from namespace %s (if it was there).", what, ns)
	if out.Applied {
		text += " memory_search no longer finds it."
	} else {
		text += " " + out.Note
	}
	return text, out, nil
}
