package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"memindex"
)

// GetInput is the arguments of memory_get: a session's messages by seq
// range, or a memory file's lines (memindex.ReadRequest).
type GetInput struct {
	Namespace  string `json:"namespace,omitempty" jsonschema:"the memory namespace to use; leave it out for the server's own (other namespaces only when the server allows them)"`
	SessionKey string `json:"sessionKey,omitempty" jsonschema:"the conversation channel to read (with sessionId), as a memory_search hit shows it"`
	SessionID  string `json:"sessionId,omitempty" jsonschema:"the session of the channel to read (with sessionKey)"`
	Path       string `json:"path,omitempty" jsonschema:"a memory file to read instead of a session, as a memory_search hit shows it"`
	From       int64  `json:"from,omitempty" jsonschema:"the first message seq, or the first line of a file (default 1)"`
	Count      int    `json:"count,omitempty" jsonschema:"how many messages or lines to return (default 20, at most 500)"`
}

func (s *Server) addGet() {
	addTool(s, &mcp.Tool{
		Name:  "memory_get",
		Title: "Read a conversation or memory file",
		Description: "Read memory in order: a session's messages from seq `from` on (give sessionKey and sessionId), " +
			"or a memory file's lines from line `from` on (give path). Use it after memory_search to read the turns around a hit " +
			"(e.g. from = the hit's seq minus 3). The result says whether more follow (more) and where to continue.",
		InputSchema: inputSchema[GetInput](func(p map[string]*jsonschema.Schema) {
			atLeast(p["from"], 0)
			between(p["count"], 0, memindex.MaxReadCount)
		}),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, s.get)
}

// get answers memory_get with the workers' read of the same ReadRequest
// `memindex read` sends.
func (s *Server) get(ctx context.Context, in GetInput) (string, memindex.ReadResponse, error) {
	var zero memindex.ReadResponse
	ns, err := s.namespace(in.Namespace)
	if err != nil {
		return "", zero, err
	}
	if in.Path == "" && (in.SessionKey == "" || in.SessionID == "") {
		return "", zero, &memindex.FieldError{Field: "sessionKey", Reason: "give sessionKey and sessionId to read a session, or path to read a memory file", Err: memindex.ErrInvalid}
	}
	req := memindex.ReadRequest{Namespace: ns, SessionKey: in.SessionKey, SessionID: in.SessionID, Path: in.Path, From: in.From, Count: in.Count}
	if err := req.Normalize(); err != nil {
		return "", zero, err
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return "", zero, err
	}
	defer cancel()
	resp, err := s.c.Read(ctx, req)
	if err != nil {
		return "", zero, err
	}
	if resp.Messages == nil {
		resp.Messages = []memindex.ReadMessage{}
	}
	return readText(req, resp), resp, nil
}

// readText is a read response as an agent reads it.
func readText(req memindex.ReadRequest, r memindex.ReadResponse) string {
	var b strings.Builder
	next := req.From
	if req.Path != "" {
		fmt.Fprintf(&b, "%s, %d %s from line %d:\n", req.Path, len(r.Lines), plural(len(r.Lines), "line", "lines"), req.From)
		for i, l := range r.Lines {
			fmt.Fprintf(&b, "%5d  %s\n", req.From+int64(i), l)
		}
		next += int64(len(r.Lines))
	} else {
		fmt.Fprintf(&b, "sessionKey %s sessionId %s, %d %s from seq %d:\n", req.SessionKey, req.SessionID, len(r.Messages), plural(len(r.Messages), "message", "messages"), req.From)
		for _, m := range r.Messages {
			fmt.Fprintf(&b, "#%d", m.Seq)
			if m.Timestamp != "" {
				fmt.Fprintf(&b, " %s", m.Timestamp)
			}
			fmt.Fprintf(&b, " %s\n", who(m.Speaker, m.Role, m.Text))
			next = m.Seq + 1
		}
	}
	if len(r.Lines) == 0 && len(r.Messages) == 0 {
		b.WriteString("Nothing there: no such session, or nothing from that seq or line on.\n")
	}
	if r.More {
		fmt.Fprintf(&b, "More follow: call memory_get again with from = %d.\n", next)
	}
	return b.String()
}
