package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"memindex"
	"memindex/client"
	"memindex/mcpserver"
)

// TestMCPOverStdio runs the real `memindex mcp` process and talks to it
// with the MCP SDK's client over its stdin and stdout (CommandTransport):
// it lists the five tools, memory_search returns the hits a NATS search
// returns for the same query, memory_add then memory_search finds the
// record, and a namespace the server does not allow is a tool error.
func TestMCPOverStdio(t *testing.T) {
	n := testNode(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client.NewClient(n.Conn())
	var last uint64
	for i, text := range []string{"We move to Lisbon in May.", "I will visit the harbour in June.", "The harbour has a fish market."} {
		ack, err := c.Publish(ctx, memindex.Event{Namespace: "demo", SessionKey: "chat", SessionID: "s1", Seq: int64(i + 1), Speaker: "Ana", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		last = ack.Seq
	}
	m, err := client.Open(ctx, client.Config{Backend: client.BackendRemote, Remote: client.RemoteConfig{Conn: n.Conn()}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if err := m.Sync(ctx, client.SyncRequest{Seq: last}); err != nil {
		t.Fatal(err)
	}

	var stderr bytes.Buffer
	cmd := exec.Command(binary(t), "mcp", "--server", n.URL(), "--namespace", "demo", "--status-wait", "100ms")
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "memindex-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to memindex mcp: %v\nstderr: %s", err, stderr.String())
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"memory_add", "memory_forget", "memory_get", "memory_search", "memory_status"}; !slices.Equal(names, want) {
		t.Fatalf("tools over stdio %v, want %v", names, want)
	}

	callTool := func(name string, args map[string]any, out any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v\nstderr: %s", name, err, stderr.String())
		}
		var text []string
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		if out != nil && !res.IsError {
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s: structured content %s: %v", name, b, err)
			}
		}
		return strings.Join(text, "\n"), res.IsError
	}

	var got memindex.SearchResponse
	if text, isErr := callTool("memory_search", map[string]any{"query": "harbour"}, &got); isErr {
		t.Fatalf("memory_search: tool error %q", text)
	}
	want, err := c.Search(ctx, memindex.SearchRequest{Namespace: "demo", Query: "harbour"})
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := json.Marshal(want.Hits)
	var wantHits []memindex.Hit
	json.Unmarshal(wb, &wantHits) //nolint:errcheck // just marshalled
	if len(wantHits) < 2 || !reflect.DeepEqual(got.Hits, wantHits) {
		t.Fatalf("memory_search over stdio hits\n%+v\nwant the NATS search's\n%+v", got.Hits, wantHits)
	}

	var added mcpserver.AddOutput
	if text, isErr := callTool("memory_add", map[string]any{"text": "Ana's dentist is Dr. Okafor."}, &added); isErr || !added.Applied {
		t.Fatalf("memory_add: %q, %+v", text, added)
	}
	if text, _ := callTool("memory_search", map[string]any{"query": "dentist Okafor", "sources": []string{"records"}}, &got); len(got.Hits) == 0 || got.Hits[0].RecordID != added.RecordID {
		t.Fatalf("memory_search after memory_add: %q, want record %s first", text, added.RecordID)
	}
	if text, isErr := callTool("memory_search", map[string]any{"query": "x", "namespace": "other"}, nil); !isErr || !strings.Contains(text, "namespace not allowed") {
		t.Fatalf("memory_search of another namespace: %q (tool error %v), want namespace not allowed", text, isErr)
	}
}

// TestMCPStartsWithoutNATS: `memindex mcp` started while no NATS server is
// reachable serves anyway (an MCP client that starts it first must not see
// it exit), and its tools answer with a tool error saying NATS is not
// connected.
func TestMCPStartsWithoutNATS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.Command(binary(t), "mcp", "--server", "nats://127.0.0.1:1", "--namespace", "demo")
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "memindex-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to memindex mcp without NATS: %v\nstderr: %s", err, stderr.String())
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_search", Arguments: map[string]any{"query": "harbour"}})
	if err != nil {
		t.Fatalf("memory_search without NATS: %v\nstderr: %s", err, stderr.String())
	}
	text := ""
	if len(res.Content) > 0 {
		text = res.Content[0].(*mcp.TextContent).Text
	}
	if !res.IsError || !strings.Contains(text, "not connected to NATS") {
		t.Fatalf("memory_search without NATS = %q (tool error %v), want a tool error saying NATS is not connected", text, res.IsError)
	}
}

// TestMCPIgnoresServesHTTPKey: a --config file shared with serve, whose
// "http" key is serve's /metrics address, leaves `memindex mcp` on stdio;
// MEMINDEX_MCP_HTTP in the file sets mcp's --http.
func TestMCPIgnoresServesHTTPKey(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"http: 127.0.0.1:9090\nnamespace: demo\n", ""},
		{"MEMINDEX_MCP_HTTP: 127.0.0.1:8765\n", "127.0.0.1:8765"},
	} {
		path := writeConfig(t, tc.file)
		fs := newFlagSet("mcp", "")
		addr := fs.String("http", "", "address (MEMINDEX_MCP_HTTP)")
		ns := fs.String("namespace", "", "namespace (MEMINDEX_NAMESPACE)")
		if err := parseMCPArgs(fs, []string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(tc.file, "namespace") && *ns != "demo" {
			t.Errorf("config %q: --namespace %q, want the file's", tc.file, *ns)
		}
		if *addr != tc.want {
			t.Errorf("config %q: --http %q, want %q", tc.file, *addr, tc.want)
		}
	}
}
