package client_test

import (
	"os"
	"path/filepath"
	"testing"

	"memindex/client"
)

// TestExcludedPath: a path is excluded when it or a directory above it
// matches a glob; the folder itself never is, so ".*" leaves out dot files
// and dot directories, and the one-shot walk agrees.
func TestExcludedPath(t *testing.T) {
	globs := []string{"drafts", ".*", "*/private.md"}
	for rel, want := range map[string]bool{
		"keep.md": false, "drafts/a.md": true, "drafts/x/y.md": true, ".hidden.md": true, ".git/x.md": true,
		"team/private.md": true, "team/public.md": false, "deep/team/private.md": false, ".": false,
	} {
		if got := client.ExcludedPath(rel, globs); got != want {
			t.Errorf("ExcludedPath(%q) = %v, want %v", rel, got, want)
		}
	}
	dir := t.TempDir()
	for _, rel := range []string{"keep.md", ".git/x.md", "drafts/a.md", "team/public.md"} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		mustTB(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mustTB(t, os.WriteFile(p, []byte("x\n"), 0o644))
	}
	evs, err := client.MemoryFileEvents(dir, "", globs)
	mustTB(t, err)
	if len(evs) != 2 || evs[0].Path != "keep.md" || evs[1].Path != "team/public.md" {
		t.Fatalf("MemoryFileEvents with %q = %+v, want keep.md and team/public.md (not nothing: '.*' must not exclude the folder)", globs, evs)
	}
}
