package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"memindex"
)

// SearchInput is the arguments of memory_search: the fields of
// memindex.SearchRequest an agent chooses.
type SearchInput struct {
	Query        string   `json:"query" jsonschema:"what to look for: a question or keywords, in the words the conversation or note would use"`
	Namespace    string   `json:"namespace,omitempty" jsonschema:"the memory namespace to use; leave it out for the server's own (other namespaces only when the server allows them)"`
	SessionKey   string   `json:"sessionKey,omitempty" jsonschema:"only this conversation channel (the sessionKey a hit shows)"`
	SessionID    string   `json:"sessionId,omitempty" jsonschema:"only this session of the channel (the sessionId a hit shows); use with sessionKey"`
	Sources      []string `json:"sources,omitempty" jsonschema:"only hits of these kinds: sessions (conversation messages), files (sections of memory files), records (facts kept with memory_add); default all"`
	DirPath      string   `json:"dirPath,omitempty" jsonschema:"a project directory: its memory files and the global ones (other projects' files are left out)"`
	Budget       int      `json:"budget,omitempty" jsonschema:"most hits to return, best first; a message, a file section or a record counts one (default 10)"`
	BudgetTokens int      `json:"budgetTokens,omitempty" jsonschema:"most estimated tokens the hits and their context may take together; hits that do not fit are passed over"`
	Around       int      `json:"around,omitempty" jsonschema:"attach up to this many messages before and after each conversation hit, as context (0 to 10)"`
	Mode         string   `json:"mode,omitempty" jsonschema:"hybrid (default: meaning and exact words together), keyword (exact words only) or vector (meaning only)"`
	After        string   `json:"after,omitempty" jsonschema:"only what was said or written at or after this RFC 3339 time, e.g. 2026-01-31T00:00:00Z"`
	Before       string   `json:"before,omitempty" jsonschema:"only what was said or written before this RFC 3339 time"`
}

func (s *Server) addSearch() {
	addTool(s, &mcp.Tool{
		Name:  "memory_search",
		Title: "Search memory",
		Description: "Search long-term memory: past conversation messages, memory file sections and kept facts (records), " +
			"best first. Each hit says where it comes from: a message its sessionKey, sessionId and seq (read the turns around it with memory_get), " +
			"a file section its path and lines, a record its recordId (remove it with memory_forget). " +
			"Narrow with sessionKey/sessionId, sources, dirPath, after/before; budget caps the hits. " +
			"The structured result is the memindex search response: hits in rank order, what they cost (used), and why a search leg did not answer (degraded).",
		InputSchema: inputSchema[SearchInput](func(p map[string]*jsonschema.Schema) {
			p["sources"].Items.Enum = enum(memindex.SourceSessions, memindex.SourceFiles, memindex.SourceRecords)
			p["mode"].Enum = enum(memindex.ModeHybrid, memindex.ModeKeyword, memindex.ModeVector)
			between(p["budget"], 0, memindex.MaxK)
			atLeast(p["budgetTokens"], 0)
			between(p["around"], 0, memindex.MaxAround)
			timeFormat(p["after"])
			timeFormat(p["before"])
		}),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, s.search)
}

// search answers memory_search with the workers' answer to the same
// SearchRequest `memindex search` sends; the workers validate it, so their
// limits and field names are the ones an agent hears about.
func (s *Server) search(ctx context.Context, in SearchInput) (string, memindex.SearchResponse, error) {
	var zero memindex.SearchResponse
	ns, err := s.namespace(in.Namespace)
	if err != nil {
		return "", zero, err
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return "", zero, err
	}
	defer cancel()
	req := memindex.SearchRequest{Namespace: ns, Query: in.Query, SessionKey: in.SessionKey, SessionID: in.SessionID,
		Sources: in.Sources, DirPath: in.DirPath, Budget: in.Budget, BudgetTokens: in.BudgetTokens, Around: in.Around,
		Mode: in.Mode, After: in.After, Before: in.Before}
	resp, err := s.c.Search(ctx, req)
	if err != nil {
		return "", zero, err
	}
	return searchText(resp), resp, nil
}

// searchText is a search response as an agent reads it: one block a hit,
// in rank order, with where it comes from and what to call next.
func searchText(r memindex.SearchResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s in namespace %s", len(r.Hits), plural(len(r.Hits), "hit", "hits"), r.Namespace)
	if r.Used.Stopped != "" {
		fmt.Fprintf(&b, " (more left out by %s)", r.Used.Stopped)
	}
	b.WriteString(".\n")
	if r.Abstained != "" {
		fmt.Fprintf(&b, "No confident match: %s\n", r.Abstained)
	}
	for _, d := range r.Degraded {
		fmt.Fprintf(&b, "Degraded: %s\n", d)
	}
	for i, h := range r.Hits {
		fmt.Fprintf(&b, "\n%d. %s (score %.3f)\n", i+1, hitWhere(h), h.Score)
		for _, c := range h.Context {
			if c.Seq < h.Seq {
				fmt.Fprintf(&b, "   (context #%d) %s\n", c.Seq, who(c.Speaker, c.Role, c.Text))
			}
		}
		text := h.Text
		if h.Source == memindex.SourceSessions {
			text = who(h.Speaker, h.Role, h.Text)
		}
		fmt.Fprintf(&b, "   %s\n", strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n   "))
		for _, c := range h.Context {
			if c.Seq > h.Seq {
				fmt.Fprintf(&b, "   (context #%d) %s\n", c.Seq, who(c.Speaker, c.Role, c.Text))
			}
		}
	}
	return b.String()
}

// hitWhere names where a hit comes from, in the arguments memory_get and
// memory_forget take.
func hitWhere(h memindex.Hit) string {
	var w string
	switch {
	case h.Source == memindex.SourceFiles:
		w = fmt.Sprintf("file %s lines %d-%d", h.Path, h.LineStart, h.LineEnd)
	case h.Source == memindex.SourceRecords:
		w = "record " + h.RecordID
		switch {
		case h.SessionID != "":
			w += fmt.Sprintf(" (scope sessionKey %s sessionId %s)", h.SessionKey, h.SessionID)
		case h.SessionKey != "":
			w += fmt.Sprintf(" (scope sessionKey %s)", h.SessionKey)
		}
	default:
		w = fmt.Sprintf("message sessionKey %s sessionId %s seq %d", h.SessionKey, h.SessionID, h.Seq)
	}
	if h.Timestamp != "" {
		w += ", " + h.Timestamp
	}
	return w
}

// who prefixes text with its speaker, or its role when it has none.
func who(speaker, role, text string) string {
	switch {
	case speaker != "":
		return speaker + ": " + text
	case role != "":
		return role + ": " + text
	}
	return text
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
