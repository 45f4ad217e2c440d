package deployments

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const dockerfilePath = "Dockerfile"

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// stage is one FROM ... of a Dockerfile.
type stage struct {
	from, name string
	ins        []instruction
}

type dockerfile struct {
	args   map[string]string // ARGs before the first FROM, with defaults
	stages []stage
}

// parseDockerfile reads the instructions of the Dockerfile at p.
func parseDockerfile(t testing.TB, p string) dockerfile {
	t.Helper()
	df := dockerfile{args: map[string]string{}}
	var line string
	for _, l := range strings.Split(string(readFile(t, p)), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") || (l == "" && line == "") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			line += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		line += l
		cmd, args, _ := strings.Cut(line, " ")
		line = ""
		in := instruction{strings.ToUpper(cmd), strings.TrimSpace(args)}
		switch {
		case in.cmd == "FROM":
			f := strings.Fields(os.Expand(in.args, func(k string) string { return df.args[k] }))
			st := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			df.stages = append(df.stages, st)
		case len(df.stages) == 0:
			if in.cmd == "ARG" {
				k, v, _ := strings.Cut(in.args, "=")
				df.args[k] = v
			}
		default:
			st := &df.stages[len(df.stages)-1]
			st.ins = append(st.ins, in)
		}
	}
	if len(df.stages) == 0 {
		t.Fatalf("%s: no FROM", p)
	}
	return df
}

// all returns the arguments of st's instructions named cmd.
func (st stage) all(cmd string) []string {
	var out []string
	for _, in := range st.ins {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// last returns the arguments of st's last instruction named cmd.
func (st stage) last(cmd string) string {
	a := st.all(cmd)
	if len(a) == 0 {
		return ""
	}
	return a[len(a)-1]
}

// env returns the variables st's ENV instructions set.
func (st stage) env() map[string]string {
	out := map[string]string{}
	for _, a := range st.all("ENV") {
		for _, kv := range strings.Fields(a) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		}
	}
	return out
}

// runtimeEnv is the environment the image gives the worker.
func (df dockerfile) runtimeEnv() map[string]string {
	return df.stages[len(df.stages)-1].env()
}

// execForm decodes an instruction in exec form (a JSON array).
func execForm(t testing.TB, what, args string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(args), &out); err != nil {
		t.Fatalf("%s %s: want the exec form [\"...\"]: %v", what, args, err)
	}
	return out
}

var makeVar = regexp.MustCompile(`(?m)^(BIN|TAGS)\s*:?=\s*(\S+)\s*$`)

// buildEnv names the variables that change what `go build` makes; the
// Makefile sets those it needs, and the image must not override them.
var buildEnv = []string{"GOFLAGS", "CGO_ENABLED", "CGO_CFLAGS", "CGO_CPPFLAGS", "CGO_LDFLAGS",
	"GOEXPERIMENT", "GOOS", "GOARCH", "GOAMD64", "CC"}

// TestDockerfileBuildsWithMake checks statically that the image's binary is
// the one `make build` makes: the builder is the Go of go.mod, runs `make
// build` with no overrides, and the runtime copies the Makefile's BIN. No
// Docker engine runs where the tests run, so the image is not built here.
func TestDockerfileBuildsWithMake(t *testing.T) {
	df := parseDockerfile(t, dockerfilePath)
	if len(df.stages) != 2 {
		t.Fatalf("%d stages, want 2 (builder, runtime)", len(df.stages))
	}
	build, run := df.stages[0], df.stages[1]
	if want := "golang:" + goVersion(t) + "-"; !strings.HasPrefix(build.from, want) {
		t.Errorf("builder FROM %s, want %s<debian>: the Go version of go.mod", build.from, want)
	}
	// One Debian release for both, so the cgo binary finds its glibc.
	release := build.from[strings.LastIndex(build.from, "-")+1:]
	if want := "debian:" + release + "-slim"; run.from != want {
		t.Errorf("runtime FROM %s, want %s (the builder's Debian release)", run.from, want)
	}
	if build.env()["GOTOOLCHAIN"] != "local" {
		t.Errorf("builder GOTOOLCHAIN %q, want local: never another Go than go.mod's", build.env()["GOTOOLCHAIN"])
	}
	for _, st := range df.stages {
		for _, k := range buildEnv {
			if _, ok := st.env()[k]; ok || slices.ContainsFunc(st.all("ARG"), func(a string) bool { return strings.HasPrefix(a, k) }) {
				t.Errorf("stage %q sets %s; the Makefile decides it", st.from, k)
			}
		}
	}
	var makes int
	for _, r := range build.all("RUN") {
		if strings.Contains(r, "go build") || strings.Contains(r, "go install") {
			t.Errorf("RUN %s: build with `make build`, not go build", r)
		}
		for _, cmd := range strings.Split(r, "&&") {
			f := strings.Fields(cmd)
			if i := slices.Index(f, "make"); i >= 0 {
				makes++
				if got := f[i+1:]; !slices.Equal(got, []string{"build"}) {
					t.Errorf("RUN %s: make %v, want exactly `make build` (no overrides)", r, got)
				}
			}
		}
	}
	if makes != 1 {
		t.Errorf("builder runs make %d times, want once: make build", makes)
	}

	vars := map[string]string{}
	for _, m := range makeVar.FindAllStringSubmatch(string(readFile(t, "../Makefile")), -1) {
		vars[m[1]] = m[2]
	}
	if vars["BIN"] == "" || vars["TAGS"] == "" {
		t.Fatalf("Makefile: BIN %q TAGS %q; want both", vars["BIN"], vars["TAGS"])
	}
	want := path.Join(build.last("WORKDIR"), vars["BIN"])
	var copied string
	for _, c := range run.all("COPY") {
		f := strings.Fields(c)
		if len(f) == 3 && f[0] == "--from="+build.name && path.Clean(f[1]) == want {
			copied = f[2]
		}
	}
	if copied != "/usr/local/bin/memindex" {
		t.Errorf("runtime copies %s to %q, want /usr/local/bin/memindex", want, copied)
	}
}

// TestDockerfileRuntime checks the runtime image: a non-root user, the data
// directory as a volume, `memindex serve` as the entrypoint, SIGTERM to stop
// and a health check on /readyz of the --http port.
func TestDockerfileRuntime(t *testing.T) {
	df := parseDockerfile(t, dockerfilePath)
	run := df.stages[len(df.stages)-1]
	if u := strings.Split(run.last("USER"), ":")[0]; u == "" || u == "0" || u == "root" {
		t.Errorf("USER %q, want a non-root user", run.last("USER"))
	}
	if ep := execForm(t, "ENTRYPOINT", run.last("ENTRYPOINT")); !slices.Equal(ep, []string{"memindex", "serve"}) {
		t.Errorf("ENTRYPOINT %q, want [memindex serve]", ep)
	}
	w := workerSettings{env: df.runtimeEnv()}
	if data := w.dataDir(); !slices.Contains(execForm(t, "VOLUME", run.last("VOLUME")), data) {
		t.Errorf("VOLUME %s does not hold the data directory %s", run.last("VOLUME"), data)
	}
	if s := run.last("STOPSIGNAL"); s != "SIGTERM" {
		t.Errorf("STOPSIGNAL %q, want SIGTERM (the worker drains on it)", s)
	}
	port := w.httpPort(t)
	if hc := run.last("HEALTHCHECK"); port == "" || !strings.Contains(hc, ":"+port+"/readyz") {
		t.Errorf("HEALTHCHECK %q, want /readyz on the MEMINDEX_HTTP port %q", hc, port)
	}
	if !strings.Contains(run.last("EXPOSE"), port) {
		t.Errorf("EXPOSE %q does not name the MEMINDEX_HTTP port %s", run.last("EXPOSE"), port)
	}
}

// TestDockerignore checks that the build context leaves out what was built
// or stored here, and keeps everything `make build` needs.
func TestDockerignore(t *testing.T) {
	var patterns []string
	for _, l := range strings.Split(string(readFile(t, "../.dockerignore")), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	ignored := func(p string) bool {
		for _, pat := range patterns {
			pat = strings.TrimPrefix(pat, "**/")
			for _, cand := range []string{p, path.Base(p)} {
				if ok, _ := path.Match(pat, cand); ok {
					return true
				}
			}
			// A pattern that names a directory leaves out all under it.
			if strings.HasPrefix(p, strings.TrimSuffix(pat, "/")+"/") {
				return true
			}
		}
		return false
	}
	for _, p := range []string{".build", "bin", "data", ".git"} {
		if !ignored(p) {
			t.Errorf(".dockerignore keeps %s; leave it out of the build context", p)
		}
	}
	need := []string{"Makefile", "go.mod", "go.sum"}
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (rel == ".git" || rel == ".build" || rel == "bin" || rel == "data") {
			return filepath.SkipDir
		}
		// Sources and the files they embed (migrations).
		if !d.IsDir() && (strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, ".sql")) && !strings.HasSuffix(rel, "_test.go") {
			need = append(need, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range need {
		if ignored(p) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", p)
		}
	}
}
