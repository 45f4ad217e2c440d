package client

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"memindex"
)

// standInQMD installs testdata/qmd.sh as an executable "qmd" in a temporary
// directory put first on PATH, and returns its path.
func standInQMD(tb testing.TB) string {
	tb.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "qmd.sh"))
	mustTB(tb, err)
	dir := tb.TempDir()
	path := filepath.Join(dir, "qmd")
	mustTB(tb, os.WriteFile(path, src, 0o755))
	tb.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return path
}

// TestQMDBackend runs the qmd backend against a stand-in executable on
// PATH that prints QMD's search JSON: the command line it gets, the hits
// it makes of the output, the filters it says it ignored, and a failing
// run's error.
func TestQMDBackend(t *testing.T) {
	ctx := context.Background()
	standInQMD(t)
	argsFile := filepath.Join(t.TempDir(), "args")
	t.Setenv("QMD_ARGS_FILE", argsFile)
	m, err := Open(ctx, Config{Backend: BackendQMD, QMD: QMDConfig{Collections: []string{"notes"}, NamespaceCollection: true}})
	mustTB(t, err)
	defer m.Close(ctx)
	resp, err := m.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "-where does Ana move", K: 5, SessionKey: "s"})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	b, err := os.ReadFile(argsFile)
	mustTB(t, err)
	gotArgs := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	wantArgs := []string{"search", "--json", "-n", "5", "-c", "notes", "-c", "agent-7", "--", "-where does Ana move"}
	if !slices.Equal(gotArgs, wantArgs) {
		t.Fatalf("qmd args %q, want %q", gotArgs, wantArgs)
	}
	if resp.Backend != BackendQMD || len(resp.Hits) != 2 {
		t.Fatalf("Search()=backend %q, %d hits, want qmd and 2 (the one without a file skipped)", resp.Backend, len(resp.Hits))
	}
	h := resp.Hits[0]
	want := memindex.Hit{ID: "#a1b2c3", Source: memindex.SourceFiles, Path: "qmd://notes/lisbon.md", Score: 0.87, LineStart: 12, LineEnd: 13,
		Snippet: "Ana moves to Lisbon in May.\nShe found a flat in Alfama.", Text: "Ana moves to Lisbon in May.\nShe found a flat in Alfama."}
	if h.ID != want.ID || h.Source != want.Source || h.Path != want.Path || h.Score != want.Score || h.LineStart != want.LineStart || h.LineEnd != want.LineEnd || h.Snippet != want.Snippet || h.Text != want.Text {
		t.Fatalf("hit 0 = %+v, want %+v", h, want)
	}
	if resp.Hits[1].LineStart != 3 {
		t.Fatalf("hit 1 line %d, want 3 (from the snippet header)", resp.Hits[1].LineStart)
	}
	if len(resp.Degraded) != 1 || !strings.Contains(resp.Degraded[0], "sessionKey") {
		t.Fatalf("Degraded %q, want sessionKey named as ignored", resp.Degraded)
	}
	if _, err := m.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "fail"}); !errors.Is(err, memindex.ErrUnavailable) || !strings.Contains(err.Error(), "index is locked") {
		t.Fatalf("Search(failing qmd)=%v, want ErrUnavailable with qmd's stderr", err)
	}
	if empty, err := m.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "nothing"}); err != nil || len(empty.Hits) != 0 || empty.Hits == nil {
		t.Fatalf("Search(no results)=%v, %v, want an empty hit list", empty.Hits, err)
	}
	rd, err := m.Read(ctx, memindex.ReadRequest{Namespace: "agent-7", Path: "qmd://notes/lisbon.md", From: 12, Count: 2})
	if err != nil || !slices.Equal(rd.Lines, []string{"line one", "line two"}) {
		t.Fatalf("Read()=%q, %v, want the two lines qmd get printed", rd.Lines, err)
	}
	if _, err := m.Read(ctx, memindex.ReadRequest{Namespace: "agent-7", SessionKey: "k", SessionID: "s"}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Read(session)=%v, want ErrUnsupported", err)
	}
	mustTB(t, m.Sync(ctx, SyncRequest{}))
	missing, err := Open(ctx, Config{Backend: BackendQMD, QMD: QMDConfig{Command: "qmd-not-installed-here"}})
	mustTB(t, err)
	if _, err := missing.Search(ctx, memindex.SearchRequest{Namespace: "a", Query: "q"}); !errors.Is(err, memindex.ErrUnavailable) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("Search(missing qmd)=%v, want ErrUnavailable saying not found", err)
	}
}

// TestParseQMDTolerant reads the object form and odd values.
func TestParseQMDTolerant(t *testing.T) {
	hits, err := parseQMD([]byte(`{"results":[{"path":"a.md","score":1.7,"line":"x","body":"full text"}]}`))
	if err != nil || len(hits) != 1 || hits[0].Path != "a.md" || hits[0].ID != "a.md" || hits[0].Score != 1 || hits[0].Text != "full text" {
		t.Fatalf("parseQMD(object)=%+v, %v", hits, err)
	}
	if _, err := parseQMD([]byte(`No results found.`)); err == nil {
		t.Fatal("parseQMD(text) succeeded, want a decode error")
	}
}

// TestQMDLive runs a real qmd when one is on PATH (skipped otherwise): its
// search output must parse.
func TestQMDLive(t *testing.T) {
	if _, err := exec.LookPath("qmd"); err != nil {
		t.Skip("qmd is not on PATH")
	}
	ctx := context.Background()
	m, err := Open(ctx, Config{Backend: BackendQMD})
	mustTB(t, err)
	defer m.Close(ctx)
	resp, err := m.Search(ctx, memindex.SearchRequest{Namespace: "live", Query: "memory"})
	if err != nil {
		t.Fatalf("Search with the real qmd: %v", err)
	}
	t.Logf("real qmd: %d hits", len(resp.Hits))
}
