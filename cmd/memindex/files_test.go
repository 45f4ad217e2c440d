package main

import (
	"bytes"
	"context"
	"encoding/json"
	"memindex/client"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"memindex"
)

// TestPublishFilesAndSearchThem: `publish --files` turns a directory of
// markdown notes into memory files; a search finds a section with its path
// and lines, scoped to the project and the global notes.
func TestPublishFilesAndSearchThem(t *testing.T) {
	n := testNode(t, 2)
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("setup.md", "# Setup\n\nRun make.\n\n## Secrets\nThe vault lives on the narwhal host.\n")
	write("notes/private.md", "# Private\nThe narwhal password is hidden.\n")
	write("readme.txt", "narwhal in a text file, not markdown\n")
	ctx := context.Background()
	srv := []string{"--server", n.URL()}
	var out, errOut bytes.Buffer
	if err := runPublish(ctx, append(srv, "--namespace", "proj", "--files", dir, "--dir-path", "/src/app", "--exclude", "notes", "--json"), nil, &out, &errOut); err != nil {
		t.Fatalf("publish --files: %v\n%s", err, errOut.String())
	}
	var res client.LinesResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Published != 1 {
		t.Fatalf("publish --files --json = %s (%v), want 1 file published (notes/ excluded, .txt skipped)", out.String(), err)
	}
	var resp memindex.SearchResponse
	waitUntil(t, 20*time.Second, "the file section to be searchable", func() bool {
		var b bytes.Buffer
		if runSearch(ctx, append(srv, "--namespace", "proj", "--json", "--dir-path", "/src/app", "narwhal", "vault"), &b) != nil {
			return false
		}
		return json.Unmarshal(b.Bytes(), &resp) == nil && len(resp.Hits) > 0
	})
	h := resp.Hits[0]
	if h.Source != memindex.SourceFiles || h.Path != "setup.md" || h.LineStart != 5 || h.LineEnd != 6 {
		t.Fatalf("hit = %+v; want setup.md lines 5-6 from files", h)
	}
	var rd memindex.ReadResponse
	b0 := bytes.Buffer{}
	if err := runRead(ctx, append(srv, "--namespace", "proj", "--path", "setup.md", "--from", "5", "--count", "2", "--json"), &b0); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b0.Bytes(), &rd); err != nil || len(rd.Lines) != 2 || rd.Lines[0] != "## Secrets" || rd.More {
		t.Fatalf("read --path setup.md --from 5 --count 2 = %s (%v), want lines 5-6", b0.String(), err)
	}
	if err := runRead(ctx, append(srv, "--namespace", "proj", "--path", "nope.md"), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("read of a missing file = %v, want a 404", err)
	}
	var other memindex.SearchResponse
	var b bytes.Buffer
	if err := runSearch(ctx, append(srv, "--namespace", "proj", "--json", "--dir-path", "/src/other", "narwhal"), &b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), &other); err != nil || len(other.Hits) != 0 {
		t.Fatalf("search from another project = %s (%v), want no hit: the file belongs to /src/app", b.String(), err)
	}
}
