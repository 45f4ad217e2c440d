package deployments

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

const unitPath = "memindex.service"

// unitFile is a systemd unit: section → key → values (a key may repeat).
type unitFile map[string]map[string][]string

func parseUnit(t testing.TB, p string) unitFile {
	t.Helper()
	u := unitFile{}
	section := ""
	for i, l := range strings.Split(string(readFile(t, p)), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = strings.Trim(l, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: %q is not key=value in a section", p, i+1, l)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// one returns the last value of key in the [Service] section.
func (u unitFile) one(key string) string {
	v := u["Service"][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// worker returns the flags and environment the unit gives the worker.
func (u unitFile) worker(t testing.TB) workerSettings {
	t.Helper()
	w := workerSettings{env: map[string]string{}}
	for _, e := range u["Service"]["Environment"] {
		for _, kv := range strings.Fields(e) {
			k, v, _ := strings.Cut(strings.Trim(kv, `"`), "=")
			w.env[k] = v
		}
	}
	args := strings.Fields(u.one("ExecStart"))
	if len(args) < 2 || path.Base(args[0]) != "memindex" || args[1] != "serve" {
		t.Fatalf("ExecStart %q, want memindex serve", u.one("ExecStart"))
	}
	w.flags = flagValues(args[2:])
	return w
}

// TestSystemdUnit checks the unit: `memindex serve` with its data directory
// the unit's StateDirectory, SIGTERM to stop, longer than a drain before
// systemd kills, and a non-root user.
func TestSystemdUnit(t *testing.T) {
	u := parseUnit(t, unitPath)
	w := u.worker(t)
	if data, want := w.dataDir(), "/var/lib/"+u.one("StateDirectory"); data != want {
		t.Errorf("data directory %q, want the StateDirectory %q (the only writable path under ProtectSystem=strict)", data, want)
	}
	if s := u.one("KillSignal"); s != "SIGTERM" {
		t.Errorf("KillSignal %q, want SIGTERM (the worker drains on it)", s)
	}
	if d := duration(t, "TimeoutStopSec", u.one("TimeoutStopSec")); d <= drain {
		t.Errorf("TimeoutStopSec %v, want longer than a drain (%v)", d, drain)
	}
	if user := u.one("User"); user == "" || user == "root" {
		t.Errorf("User %q, want a non-root user", user)
	}
	if u.one("ProtectSystem") != "strict" || u.one("NoNewPrivileges") != "yes" {
		t.Errorf("ProtectSystem %q NoNewPrivileges %q, want strict and yes", u.one("ProtectSystem"), u.one("NoNewPrivileges"))
	}
	if w.httpPort(t) == "" {
		t.Error("no MEMINDEX_HTTP / --http: health and metrics need it")
	}
}

// TestSystemdUnitVerifies runs systemd-analyze verify on the unit, when it
// is installed, with ExecStart pointing at an executable that exists here;
// any complaint (an unknown key, a bad value) fails.
func TestSystemdUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := strings.ReplaceAll(string(readFile(t, unitPath)), "/usr/local/bin/memindex", exe)
	p := filepath.Join(t.TempDir(), "memindex.service")
	if err := os.WriteFile(p, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", p).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestYAMLParses parses every YAML file under deployments/, all documents.
func TestYAMLParses(t *testing.T) {
	files := filesUnder(t, ".", "*.yaml", "*.yml")
	if len(files) < 6 {
		t.Fatalf("found %d YAML files (%v); want compose, kustomization, 4 manifests and the nats values", len(files), files)
	}
	for _, p := range files {
		yamlDocs[any](t, p)
	}
}
