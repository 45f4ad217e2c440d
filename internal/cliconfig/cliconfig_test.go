package cliconfig

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testFlags is a command's flag set as cmd/memindex registers one: each
// flag's usage names its environment variable, and --config names the file.
func testFlags(t *testing.T, config string) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("memindex test", flag.ContinueOnError)
	fs.Int("batch", 10, "events a batch (MEMINDEX_BATCH)")
	fs.Int("chunk-tokens", 128, "tokens a chunk (MEMINDEX_CHUNK_TOKENS)")
	fs.Bool("sqlite-vec", true, "use sqlite-vec (MEMINDEX_SQLITE_VEC)")
	fs.Duration("cooldown", time.Second, "breaker cool-down (MEMINDEX_COOLDOWN)")
	fs.String("server", "nats://127.0.0.1:4222", "NATS URL (NATS_URL or MEMINDEX_SERVER)")
	fs.String("password", "", "NATS password (NATS_PASSWORD)")
	fs.String("note", "", "no environment variable here (see the docs)")
	fs.String("config", config, "YAML file (MEMINDEX_CONFIG)")
	return fs
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "memindex.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEnvNames(t *testing.T) {
	fs := testFlags(t, "")
	for name, want := range map[string][]string{
		"batch":  {"MEMINDEX_BATCH"},
		"server": {"NATS_URL", "MEMINDEX_SERVER"},
		"note":   nil,
	} {
		if got := EnvNames(fs.Lookup(name)); !reflect.DeepEqual(got, want) {
			t.Errorf("EnvNames(--%s) = %v, want %v", name, got, want)
		}
	}
	t.Setenv("NATS_URL", "")
	t.Setenv("MEMINDEX_SERVER", "nats://x:4222")
	if got := EnvSetFor(fs.Lookup("server")); got != "MEMINDEX_SERVER" {
		t.Errorf("EnvSetFor(--server) = %q, want MEMINDEX_SERVER (an empty NATS_URL is unset)", got)
	}
}

// TestApplyPrecedence: command line > environment > file > default, with
// flag names and environment variable names as keys, lists for a
// repeatable flag's values, and keys of known left alone.
func TestApplyPrecedence(t *testing.T) {
	path := writeFile(t, "batch: 3\nMEMINDEX_CHUNK_TOKENS: 64\nsqlite-vec: false\ncooldown: 1m\nserver: nats://file:4222\nserve-only: x\n")
	t.Setenv("MEMINDEX_BATCH", "7")
	fs := testFlags(t, path)
	if err := fs.Parse([]string{"--server", "nats://cli:4222"}); err != nil {
		t.Fatal(err)
	}
	got, err := Apply(fs, func(k string) bool { return k == "serve-only" })
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for _, w := range []Setting{
		{Name: "batch", Value: "10", Source: SourceEnv, From: "MEMINDEX_BATCH"}, // cmd reads the variable into the default; this set does not
		{Name: "chunk-tokens", Value: "64", Source: SourceFile, From: path + ":2"},
		{Name: "sqlite-vec", Value: "false", Source: SourceFile, From: path + ":3"},
		{Name: "cooldown", Value: "1m0s", Source: SourceFile, From: path + ":4"},
		{Name: "server", Value: "nats://cli:4222", Source: SourceFlag},
		{Name: "note", Value: "", Source: SourceDefault},
	} {
		if got[w.Name] != w {
			t.Errorf("Apply()[%s] = %+v, want %+v", w.Name, got[w.Name], w)
		}
	}
	if !IsSet(fs, "chunk-tokens") || !IsSet(fs, "batch") || !IsSet(fs, "server") || IsSet(fs, "note") {
		t.Errorf("IsSet: chunk-tokens %v batch %v server %v note %v, want true true true false",
			IsSet(fs, "chunk-tokens"), IsSet(fs, "batch"), IsSet(fs, "server"), IsSet(fs, "note"))
	}
	if _, err := Apply(fs, nil); err == nil || !strings.Contains(err.Error(), `unknown key "serve-only"`) {
		t.Errorf("Apply with known nil: err = %v, want serve-only named as unknown", err)
	}
}

func TestApplyNoFile(t *testing.T) {
	fs := testFlags(t, "")
	got, err := Apply(fs, nil)
	if err != nil || got["batch"].Source != SourceDefault || got["batch"].Value != "10" {
		t.Fatalf("Apply() with no --config = %+v, %v; want the defaults", got["batch"], err)
	}
}

// TestApplyFileErrors: each mistake names the file, the line, the key and
// what to do, and never the secret's value.
func TestApplyFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unknown key", "batch: 1\nbatchh: 2\n", []string{`unknown key "batchh"`, "line 2", "memindex test -h"}},
		{"bad int", "batch: lots\n", []string{`key "batch"`, `"lots" is not an integer`}},
		{"bad bool", "sqlite-vec: maybe\n", []string{"true or false"}},
		{"bad duration", "cooldown: 5\n", []string{"a duration"}},
		{"secret", "password: hunter2\n", []string{`key "password" is a secret`, "NATS_PASSWORD"}},
		{"twice", "batch: 1\nMEMINDEX_BATCH: 2\n", []string{`key "MEMINDEX_BATCH" sets --batch again (first on line 1)`}},
		{"nested", "server:\n  url: x\n", []string{"nested settings are not supported"}},
		{"list of mappings", "batch:\n  - a: 1\n", []string{"a list may hold only plain values"}},
		{"no value", "batch:\n", []string{`key "batch" has no value`}},
		{"not a mapping", "- a\n- b\n", []string{"want a mapping", "not a list"}},
		{"not yaml", "batch: [1\n", []string{"not valid YAML"}},
		{"config in config", "config: other.yaml\n", []string{"cannot name another"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.body)
			_, err := Apply(testFlags(t, path), nil)
			if err == nil {
				t.Fatalf("Apply with %q: no error, want one", tc.body)
			}
			for _, w := range append(tc.want, "--config "+path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}
	if _, err := Apply(testFlags(t, filepath.Join(t.TempDir(), "missing.yaml")), nil); err == nil || !strings.HasPrefix(err.Error(), "--config: ") {
		t.Errorf("missing file: err = %v, want one starting --config:", err)
	}
	if entries, err := ReadFile(writeFile(t, "")); err != nil || entries != nil {
		t.Errorf("ReadFile(empty) = %v, %v; want nothing", entries, err)
	}
}

// TestEffectiveRedacts: secrets from a flag or the environment, provider
// keys and credentials in URLs never show; other values do.
func TestEffectiveRedacts(t *testing.T) {
	t.Setenv("NATS_PASSWORD", "pw-env-1234")
	t.Setenv("PROVIDER_KEY_FILE", "/run/secrets/key")
	set := map[string]Setting{
		"password": {Name: "password", Source: SourceDefault},
		"token":    {Name: "token", Value: "tok-1234", Source: SourceFlag},
		"server":   {Name: "server", Value: "nats://ana:s3cret@h:4222", Source: SourceFlag},
		"batch":    {Name: "batch", Value: "10", Source: SourceDefault},
	}
	got := Effective(set, []string{"PROVIDER_KEY", "OTHER_KEY"})
	want := []Setting{
		{Name: "OTHER_KEY", Source: SourceDefault},
		{Name: "PROVIDER_KEY", Value: Redacted, Source: SourceEnv, From: "PROVIDER_KEY_FILE"},
		{Name: "batch", Value: "10", Source: SourceDefault},
		{Name: "password", Value: Redacted, Source: SourceEnv, From: "NATS_PASSWORD"},
		{Name: "server", Value: "nats://redacted@h:4222", Source: SourceFlag},
		{Name: "token", Value: Redacted, Source: SourceFlag},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Effective() =\n%+v\nwant\n%+v", got, want)
	}
}

func TestFlagTypeAndKeys(t *testing.T) {
	fs := testFlags(t, "")
	for name, want := range map[string]string{"batch": "an integer", "sqlite-vec": "true or false", "cooldown": "a duration such as 500ms, 30s or 5m", "note": "a string"} {
		if got := FlagType(fs.Lookup(name)); got != want {
			t.Errorf("FlagType(--%s) = %q, want %q", name, got, want)
		}
	}
	k := Keys(fs)
	if !k["batch"] || !k["MEMINDEX_BATCH"] || !k["NATS_URL"] || k["nope"] {
		t.Errorf("Keys() = %v, want flag and environment names only", k)
	}
}
