// Package puretest checks, for tests, that a package builds without cgo
// and imports none of memindex's cgo packages. It owns test scaffolding
// only and must not be imported by non-test code.
package puretest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Forbidden are memindex's packages that compile SQLite, sqlite-vec, the
// Chinese dictionary or the embedder providers: a pure-Go package must not
// depend on them.
var Forbidden = []string{"memindex/store", "memindex/consumer", "memindex/embedder", "memindex/query", "memindex/chunker"}

// BuildsWithoutCgo fails tb unless the package pkg (e.g. "./client"), run
// from the module root root, and everything it imports are pure Go, none
// of it one of Forbidden, and it builds with CGO_ENABLED=0.
func BuildsWithoutCgo(tb testing.TB, root, pkg string) {
	tb.Helper()
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	run := func(cgo string, args ...string) string {
		tb.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
		out, err := cmd.CombinedOutput()
		if err != nil {
			tb.Fatalf("CGO_ENABLED=%s go %s: %v\n%s", cgo, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// Listed with cgo on, so that a package's cgo files show: none outside
	// the standard library (whose net and os/user use cgo when they may).
	deps := run("1", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{len .CgoFiles}}", pkg)
	var n int
	for line := range strings.Lines(deps) {
		f := strings.Fields(line)
		if len(f) != 3 {
			tb.Fatalf("go list printed %q", line)
		}
		path, std, cgoFiles := f[0], f[1] == "true", f[2]
		n++
		if !std && cgoFiles != "0" {
			tb.Errorf("%s depends on %s, which has %s cgo files", pkg, path, cgoFiles)
		}
		for _, f := range Forbidden {
			if path == f || strings.HasPrefix(path, f+"/") {
				tb.Errorf("%s depends on %s", pkg, path)
			}
		}
	}
	if self := "memindex/" + strings.TrimPrefix(pkg, "./"); n < 10 || !strings.Contains(deps, self+" ") {
		tb.Fatalf("go list -deps %s listed %d packages, not %s's:\n%s", pkg, n, self, deps)
	}
	run("0", "build", "-o", os.DevNull, pkg)
}
