package importer_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildsWithoutCgo proves the package's rule: built with
// CGO_ENABLED=0, it and everything it imports are pure Go, and none of it
// is memindex's store, consumer, embedder, query or chunker.
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
	deps := run("1", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{len .CgoFiles}}", "./importer")
	forbidden := []string{"memindex/store", "memindex/consumer", "memindex/embedder", "memindex/query", "memindex/chunker"}
	for line := range strings.Lines(deps) {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("go list printed %q", line)
		}
		if f[1] != "true" && f[2] != "0" {
			t.Errorf("./importer depends on %s, which has %s cgo files", f[0], f[2])
		}
		for _, p := range forbidden {
			if f[0] == p || strings.HasPrefix(f[0], p+"/") {
				t.Errorf("./importer depends on %s", f[0])
			}
		}
	}
	if !strings.Contains(deps, "memindex/importer ") || !strings.Contains(deps, "memindex/client ") {
		t.Fatalf("go list -deps ./importer did not list the importer and the client:\n%s", deps)
	}
	run("0", "build", "-o", os.DevNull, "./importer")
}
