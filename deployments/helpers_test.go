package deployments

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// drain bounds how long a worker takes to stop after SIGTERM: the batch in
// hand commits within consumer.shutdownGrace (15 s), the micro service stops
// within 10 s and the connection flushes within 5 s (node/node.go, Node.Run).
// Every deployment must give a worker longer than this before it kills it.
const drain = 30 * time.Second

// dataDefault is where the worker keeps its shards when neither --data nor
// MEMINDEX_DATA says (relative to the working directory).
const dataDefault = "./data"

// readFile returns the content of the file at path (relative to deployments/).
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}

// yamlDocs decodes every document of the YAML file at path into a value of
// type T, and fails the test on any syntax error or an empty file.
func yamlDocs[T any](t testing.TB, path string) []T {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, path)))
	var docs []T
	for {
		var v T
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, v)
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no YAML document", path)
	}
	return docs
}

// yamlDoc decodes the single document of the YAML file at path.
func yamlDoc[T any](t testing.TB, path string) T {
	t.Helper()
	docs := yamlDocs[T](t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: %d YAML documents, want 1", path, len(docs))
	}
	return docs[0]
}

// filesUnder returns the files under dir whose names match one of the glob
// patterns, in walk order.
func filesUnder(t testing.TB, dir string, patterns ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, p := range patterns {
			if ok, _ := filepath.Match(p, d.Name()); ok {
				out = append(out, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return out
}

// workerSettings is what a deployment hands one worker process: its
// command-line flags and its environment.
type workerSettings struct {
	flags map[string]string
	env   map[string]string
}

// flagValues parses the --name=value and --name value flags of args (Go's
// flag syntax, one or two dashes). A flag without a value maps to "".
func flagValues(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name := strings.TrimLeft(a, "-")
		if k, v, ok := strings.Cut(name, "="); ok {
			out[k] = v
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out[name] = args[i+1]
			i++
			continue
		}
		out[name] = ""
	}
	return out
}

// setting resolves one setting as the worker does: the flag, else the
// environment variable, else def.
func (w workerSettings) setting(flag, env, def string) string {
	if v, ok := w.flags[flag]; ok {
		return v
	}
	if v, ok := w.env[env]; ok && v != "" {
		return v
	}
	return def
}

// dataDir is the worker's --data directory.
func (w workerSettings) dataDir() string {
	return w.setting("data", "MEMINDEX_DATA", dataDefault)
}

// httpPort is the port of the worker's /metrics, /livez and /readyz
// listener (--http, MEMINDEX_HTTP), or "" when none is set.
func (w workerSettings) httpPort(t testing.TB) string {
	t.Helper()
	addr := w.setting("http", "MEMINDEX_HTTP", "")
	if addr == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("MEMINDEX_HTTP / --http %q: %v", addr, err)
	}
	return port
}

// depVersion returns the version go.mod requires of module path.
func depVersion(t testing.TB, path string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(path) + `\s+(v\S+)`)
	m := re.FindStringSubmatch(string(readFile(t, "../go.mod")))
	if m == nil {
		t.Fatalf("go.mod does not require %s", path)
	}
	return m[1]
}

var goDirective = regexp.MustCompile(`(?m)^(go|toolchain)\s+(go)?(\S+)\s*$`)

// goVersion returns the Go version go.mod asks for: its toolchain line, or
// else its go line.
func goVersion(t testing.TB) string {
	t.Helper()
	var goLine, toolchain string
	for _, m := range goDirective.FindAllStringSubmatch(string(readFile(t, "../go.mod")), -1) {
		if m[1] == "toolchain" {
			toolchain = m[3]
		} else {
			goLine = m[3]
		}
	}
	if toolchain != "" {
		return toolchain
	}
	if goLine == "" {
		t.Fatal("go.mod has no go line")
	}
	return goLine
}

// duration parses a compose or systemd duration ("60s", "1m30s", "90").
func duration(t testing.TB, what, s string) time.Duration {
	t.Helper()
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s %q: not a duration", what, s)
	}
	return d
}
