package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"memindex/internal/cliconfig"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeConfig writes a config file into a temporary directory.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "memindex.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// showConfig runs `memindex config show --json` with args and returns the
// settings by name.
func showConfig(t *testing.T, args ...string) (map[string]cliconfig.Setting, string) {
	t.Helper()
	var out bytes.Buffer
	if err := runConfig(append([]string{"show", "--json"}, args...), &out); err != nil {
		t.Fatalf("config show %v: %v", args, err)
	}
	var rep struct {
		Settings []cliconfig.Setting `json:"settings"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("config show --json = %s: %v", out.String(), err)
	}
	m := map[string]cliconfig.Setting{}
	for _, s := range rep.Settings {
		m[s.Name] = s
	}
	return m, out.String()
}

// TestConfigPrecedence: flag > environment > file > default, for flag names
// and environment-style names in the file.
func TestConfigPrecedence(t *testing.T) {
	path := writeConfig(t, "chunk-tokens: 80\nbatch: 9\nlog-level: warn\nMEMINDEX_CHUNK_CONTEXT: 4\nsqlite-vec: false\nbreaker-cooldown: 1m\n")
	t.Setenv("MEMINDEX_BATCH", "7")
	got, _ := showConfig(t, "--config", path, "--log-level", "debug")
	for _, w := range []cliconfig.Setting{
		{Name: "chunk-tokens", Value: "80", Source: cliconfig.SourceFile, From: path + ":1"},
		{Name: "batch", Value: "7", Source: cliconfig.SourceEnv, From: "MEMINDEX_BATCH"},
		{Name: "log-level", Value: "debug", Source: cliconfig.SourceFlag},
		{Name: "chunk-context", Value: "4", Source: cliconfig.SourceFile, From: path + ":4"},
		{Name: "sqlite-vec", Value: "false", Source: cliconfig.SourceFile, From: path + ":5"},
		{Name: "breaker-cooldown", Value: "1m0s", Source: cliconfig.SourceFile, From: path + ":6"},
		{Name: "embed-batch", Value: "64", Source: cliconfig.SourceDefault},
	} {
		if got[w.Name] != w {
			t.Errorf("setting %s = %+v, want %+v", w.Name, got[w.Name], w)
		}
	}
}

// TestConfigFromEnvironment: MEMINDEX_CONFIG names the file.
func TestConfigFromEnvironment(t *testing.T) {
	t.Setenv("MEMINDEX_CONFIG", writeConfig(t, "worker: from-file\n"))
	got, _ := showConfig(t)
	if s := got["worker"]; s.Value != "from-file" || s.Source != cliconfig.SourceFile {
		t.Fatalf("worker = %+v, want from-file from the file named by MEMINDEX_CONFIG", s)
	}
}

// TestConfigFileErrors: each mistake names the key, the file and what to do.
func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unknown key", "chunk-tokens: 64\nchunk-tokenz: 64\n", []string{`unknown key "chunk-tokenz"`, "line 2"}},
		{"bad int", "chunk-tokens: lots\n", []string{`key "chunk-tokens"`, `"lots" is not an integer`}},
		{"bad bool", "sqlite-vec: maybe\n", []string{`key "sqlite-vec"`, "true or false"}},
		{"bad duration", "breaker-cooldown: 5\n", []string{`key "breaker-cooldown"`, "a duration"}},
		{"secret", "password: hunter2\n", []string{`key "password" is a secret`, "NATS_PASSWORD_FILE"}},
		{"twice", "batch: 1\nMEMINDEX_BATCH: 2\n", []string{`key "MEMINDEX_BATCH" sets --batch again`, "line 1"}},
		{"nested", "embedder:\n  name: openai\n", []string{`key "embedder"`, "nested settings are not supported"}},
		{"no value", "model:\n", []string{`key "model" has no value`}},
		{"not a mapping", "- a\n- b\n", []string{"want a mapping"}},
		{"config in config", "config: other.yaml\n", []string{"cannot name another"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.body)
			err := runConfig([]string{"show", "--config", path}, &bytes.Buffer{})
			if err == nil {
				t.Fatalf("config show with %q: no error, want one", tc.body)
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}
	if err := runConfig([]string{"show", "--config", filepath.Join(t.TempDir(), "missing.yaml")}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing file: err = %v, want an error naming --config", err)
	}
}

// TestConfigShowRedactsSecrets: passwords, tokens, provider keys and
// credentials in URLs never show; file paths do.
func TestConfigShowRedactsSecrets(t *testing.T) {
	t.Setenv("NATS_PASSWORD", "pw-from-env-1234")
	t.Setenv("OPENAI_API_KEY", "sk-from-env-5678")
	t.Setenv("NATS_URL", "nats://ana:url-secret-9@example.com:4222")
	path := writeConfig(t, "embedder: openai\ncreds: /etc/memindex/worker.creds\nuser: ana\n")
	got, out := showConfig(t, "--config", path, "--token", "tok-flag-4321")
	for _, secret := range []string{"pw-from-env-1234", "sk-from-env-5678", "url-secret-9", "tok-flag-4321"} {
		if strings.Contains(out, secret) {
			t.Errorf("config show prints the secret %q:\n%s", secret, out)
		}
	}
	for name, want := range map[string]cliconfig.Setting{
		"password":       {Name: "password", Value: cliconfig.Redacted, Source: cliconfig.SourceEnv, From: "NATS_PASSWORD"},
		"token":          {Name: "token", Value: cliconfig.Redacted, Source: cliconfig.SourceFlag},
		"OPENAI_API_KEY": {Name: "OPENAI_API_KEY", Value: cliconfig.Redacted, Source: cliconfig.SourceEnv, From: "OPENAI_API_KEY"},
		"server":         {Name: "server", Value: "nats://redacted@example.com:4222", Source: cliconfig.SourceEnv, From: "NATS_URL"},
		"creds":          {Name: "creds", Value: "/etc/memindex/worker.creds", Source: cliconfig.SourceFile, From: path + ":2"},
	} {
		if got[name] != want {
			t.Errorf("setting %s = %+v, want %+v", name, got[name], want)
		}
	}
	var human bytes.Buffer
	if err := runConfig([]string{"show", "--config", path}, &human); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(human.String(), "file "+path+":2") || strings.Contains(human.String(), "sk-from-env") {
		t.Errorf("config show (table) =\n%s\nwant sources with file and line, no secrets", human.String())
	}
}

// TestConfigFileSharedWithOtherCommands: a command applies the keys it has
// and leaves serve's other keys alone; a key no command knows is an error.
func TestConfigFileSharedWithOtherCommands(t *testing.T) {
	path := writeConfig(t, "server: nats://files-server:4222\nchunk-tokens: 64\nMEMINDEX_DATA: /srv/memindex\n")
	var conn connFlags
	fs := newFlagSet("search", "[flags]")
	conn.register(fs, "nats://127.0.0.1:4222")
	data := fs.String("data", "./data", "data (MEMINDEX_DATA)")
	if _, err := parseArgs(fs, []string{"--config", path, "query"}); err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	if conn.Server != "nats://files-server:4222" || *data != "/srv/memindex" {
		t.Fatalf("server %q data %q, want the file's", conn.Server, *data)
	}
	bad := writeConfig(t, "namespcae: x\n")
	fs = newFlagSet("search", "[flags]")
	conn.register(fs, "")
	if _, err := parseArgs(fs, []string{"--config", bad}); err == nil || !strings.Contains(err.Error(), `unknown key "namespcae"`) {
		t.Fatalf("parseArgs with an unknown key: err = %v, want it named", err)
	}
}

// TestServeFlagEnvNames checks the registry cliconfig reads from usage:
// setting each environment variable a serve flag's usage names changes
// that flag's default, so "the environment set it" is told right.
func TestServeFlagEnvNames(t *testing.T) {
	fs := serveFlagSet()
	if fs == nil {
		t.Fatal("serveFlagSet returned nil: runServe no longer calls parseFlags")
	}
	values := map[string]string{}
	checked := 0
	fs.VisitAll(func(f *flag.Flag) {
		names := cliconfig.EnvNames(f)
		if len(names) == 0 {
			return
		}
		v := "zz-test"
		switch cliconfig.FlagType(f) {
		case "true or false":
			b, _ := strconv.ParseBool(f.DefValue)
			v = strconv.FormatBool(!b)
		case "an integer":
			v = "7"
		case "a number":
			v = "0.5"
		case "a duration such as 500ms, 30s or 5m":
			v = "7s"
		case "a size such as 512MiB or 2GiB", "auto or a size such as 512MiB or 2GiB":
			v = "7"
		}
		t.Setenv(names[0], v)
		values[f.Name] = v
		checked++
	})
	if checked < 20 {
		t.Fatalf("only %d serve flags name an environment variable in their usage; the usage parser is broken", checked)
	}
	fs = serveFlagSet()
	for name, v := range values {
		f := fs.Lookup(name)
		if f.DefValue != v {
			t.Errorf("--%s: with %s=%s its default is %q: the usage names an environment variable the flag does not read", name, cliconfig.EnvNames(f)[0], v, f.DefValue)
		}
	}
}
