package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildsWithoutCgo proves the package's rule: built with
// CGO_ENABLED=0, it and everything it imports are pure Go, and none of it
// is memindex's store, consumer, embedder or query (SQLite, sqlite-vec,
// gse's dictionary, the embedder providers stay out of a program that
// only searches).
func TestBuildsWithoutCgo(t *testing.T) {
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	run := func(cgo string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("CGO_ENABLED=%s go %s: %v\n%s", cgo, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// Listed with cgo on, so that a package's cgo files show: none outside
	// the standard library (whose net and os/user use cgo when they may).
	deps := run("1", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{len .CgoFiles}}", "./client")
	forbidden := []string{"memindex/store", "memindex/consumer", "memindex/embedder", "memindex/query", "memindex/chunker"}
	var n int
	for line := range strings.Lines(deps) {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("go list printed %q", line)
		}
		path, std, cgoFiles := f[0], f[1] == "true", f[2]
		n++
		if !std && cgoFiles != "0" {
			t.Errorf("./client depends on %s, which has %s cgo files", path, cgoFiles)
		}
		for _, f := range forbidden {
			if path == f || strings.HasPrefix(path, f+"/") {
				t.Errorf("./client depends on %s", path)
			}
		}
	}
	if n < 10 || !strings.Contains(deps, "memindex/client ") {
		t.Fatalf("go list -deps ./client listed %d packages, not the client's:\n%s", n, deps)
	}
	run("0", "build", "-o", os.DevNull, "./client")
}
