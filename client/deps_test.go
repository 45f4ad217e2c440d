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
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("CGO_ENABLED=0 go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	deps := run("list", "-deps", "-f", "{{.ImportPath}} {{if .CgoFiles}}cgo{{end}}", "./client")
	forbidden := []string{"memindex/store", "memindex/consumer", "memindex/embedder", "memindex/query", "memindex/chunker"}
	var n int
	for line := range strings.Lines(deps) {
		path, cgo, _ := strings.Cut(strings.TrimSpace(line), " ")
		n++
		if cgo != "" || path == "C" || path == "runtime/cgo" {
			t.Errorf("./client depends on %s, which uses cgo", path)
		}
		for _, f := range forbidden {
			if path == f || strings.HasPrefix(path, f+"/") {
				t.Errorf("./client depends on %s", path)
			}
		}
	}
	if n < 10 || !strings.Contains(deps, "memindex/client") {
		t.Fatalf("go list -deps ./client listed %d packages, not the client's:\n%s", n, deps)
	}
	run("build", "-o", os.DevNull, "./client")
}
