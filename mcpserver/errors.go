package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"memindex"
	"memindex/client"
)

// Sentinel errors of package mcpserver. A tool call that fails with one
// comes back as a tool error whose text starts with the operation and
// holds the sentinel's words.
var (
	// ErrNamespaceNotAllowed is returned when a call names a namespace that
	// is neither Config.Namespace nor one of Config.AllowNamespaces.
	ErrNamespaceNotAllowed = errors.New("namespace not allowed")
	// ErrNamespaceRequired is returned when a call names no namespace and
	// the server has no default one.
	ErrNamespaceRequired = errors.New("namespace required")
	// ErrNotConnected is returned while the server's NATS connection is
	// down (connecting or reconnecting).
	ErrNotConnected = errors.New("not connected to NATS")
)

// toolError words err, the failure of operation op (e.g. "memory_search"),
// for an agent: the worker's code and reason for an error reply (the field
// of a 400, the Retry-After of a 429, "retry" for a 503), and what to do
// when nothing serves. The SDK returns it as a result with isError set.
func toolError(op string, err error, timeout time.Duration) error {
	var remote *client.RemoteError
	var field *memindex.FieldError
	switch {
	case errors.As(err, &remote):
		return fmt.Errorf("%s: %s", op, remoteWords(remote))
	case errors.As(err, &field):
		return fmt.Errorf("%s: invalid argument: %s", op, field.Error())
	case errors.Is(err, client.ErrNoWorker):
		return fmt.Errorf("%s: no memindex worker is serving (nothing answers on NATS); start one with `memindex serve`, then retry", op)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: the memindex workers did not answer within %s; retry, or check `memindex status`: %w", op, timeout, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// remoteWords is an error reply in words: "memindex 429 overloaded: <the
// worker's message>; retry after 2s".
func remoteWords(e *client.RemoteError) string {
	what := map[string]string{
		memindex.CodeBadRequest:  "invalid argument",
		memindex.CodeNotFound:    "not found",
		memindex.CodeTooLarge:    "too large",
		memindex.CodeOverloaded:  "overloaded",
		memindex.CodeUnavailable: "unavailable",
	}[e.Code]
	if what == "" {
		what = "error"
	}
	s := fmt.Sprintf("memindex %s %s: %s", e.Code, what, e.Message)
	switch {
	case e.RetryAfter > 0:
		s += fmt.Sprintf("; retry after %s", e.RetryAfter)
	case e.Code == memindex.CodeOverloaded:
		s += "; retry later"
	case e.Code == memindex.CodeUnavailable:
		s += "; retry in a moment"
	}
	return s
}

// addTool adds tool t to s, answered by h, which returns the readable text
// and the structured content of a result. An error of h becomes a tool
// error (toolError).
func addTool[In, Out any](s *Server, t *mcp.Tool, h func(ctx context.Context, in In) (string, Out, error)) {
	mcp.AddTool(s.srv, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		text, out, err := h(ctx, in)
		if err != nil {
			var zero Out
			return nil, zero, toolError(t.Name, err, s.cfg.Timeout)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
	})
}
