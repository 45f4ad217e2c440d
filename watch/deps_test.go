package watch_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBuildsWithoutCgo proves the package's rule: it and everything it
// imports build with CGO_ENABLED=0, and none of it is memindex's store,
// consumer, embedder, query or chunker.
func TestBuildsWithoutCgo(t *testing.T) {
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("CGO_ENABLED=0 go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	deps := strings.Fields(goCmd("list", "-deps", "./watch"))
	if len(deps) < 10 {
		t.Fatalf("go list -deps ./watch listed %q", deps)
	}
	for _, d := range deps {
		for _, bad := range []string{"memindex/store", "memindex/consumer", "memindex/embedder", "memindex/query", "memindex/chunker"} {
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("./watch depends on %s", d)
			}
		}
	}
	goCmd("build", "-o", os.DevNull, "./watch")
}
