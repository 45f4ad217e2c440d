package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"memindex/embedder"
	"memindex/internal/natsconn"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"
)

// Configuration comes from four places; the first that sets a flag wins:
// the command line, the environment variable its usage names, the YAML
// file of --config (MEMINDEX_CONFIG), the built-in default. The file maps
// flag names (or their environment variable names) to values:
//
//	data: /var/lib/memindex
//	chunk-tokens: 64
//	MEMINDEX_EMBEDDER: openai
//
// A flag's environment variables are read from its usage: every NAME_LIKE
// word in parentheses ("... (MEMINDEX_DATA)"), the convention every flag
// with an environment fallback follows (deployments_test.go relies on it
// too). So a new flag takes part with no registration of its own.

// Sources of a setting, as `config show` names them.
const (
	sourceFlag    = "flag"
	sourceEnv     = "env"
	sourceFile    = "file"
	sourceDefault = "default"
)

// redacted replaces a secret's value wherever a setting is shown.
const redacted = "[redacted]"

// secretFlags are flags whose values are secrets: never shown, and refused
// in a config file (a file is copied and read more than the environment).
var secretFlags = map[string]string{
	"password": "NATS_PASSWORD or NATS_PASSWORD_FILE",
	"token":    "NATS_TOKEN or NATS_TOKEN_FILE",
}

// configSkip are commands whose flags share names with serve's but not their
// meaning (bench and eval build their own throw-away workers), so a serve
// config file must not steer them.
var configSkip = map[string]bool{"memindex bench": true, "memindex eval": true}

// envInUsage finds the environment variable names in a flag's usage: a word
// of capitals, digits and at least one underscore inside parentheses.
var (
	usageParens = regexp.MustCompile(`\(([^()]*)\)`)
	envWord     = regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b`)
)

// flagEnvNames returns the environment variables f falls back to, from its
// usage.
func flagEnvNames(f *flag.Flag) []string {
	var names []string
	for _, m := range usageParens.FindAllStringSubmatch(f.Usage, -1) {
		names = append(names, envWord.FindAllString(m[1], -1)...)
	}
	return names
}

// envSetFor returns the first of f's environment variables that is set
// (env treats an empty value as unset, and so does this), or "".
func envSetFor(f *flag.Flag) string {
	for _, n := range flagEnvNames(f) {
		if v, ok := os.LookupEnv(n); ok && v != "" {
			return n
		}
	}
	return ""
}

// setting is one flag's effective value and where it came from.
type setting struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
	// From names the environment variable or file (with its line) when
	// the source is env or file.
	From string `json:"from,omitempty"`
}

// addConfigFlag registers --config on fs unless it has one.
func addConfigFlag(fs *flag.FlagSet) {
	if fs.Lookup("config") == nil {
		fs.String("config", env("MEMINDEX_CONFIG", ""), "YAML file of settings (flag names or their environment variable names as keys); flags and environment variables override it (MEMINDEX_CONFIG)")
	}
}

// configEntry is one key of a config file.
type configEntry struct {
	key    string
	line   int
	values []string
}

// readConfigFile reads the YAML mapping in path.
func readConfigFile(path string) ([]configEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("--config %s: not valid YAML: %w", path, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 { // empty file
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("--config %s: want a mapping of flag names to values (`chunk-tokens: 64`), not a %s", path, kindName(root.Kind))
	}
	var out []configEntry
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		e := configEntry{key: k.Value, line: k.Line}
		switch {
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
			return nil, fmt.Errorf("--config %s line %d: key %q has no value: give one or remove the key", path, k.Line, k.Value)
		case v.Kind == yaml.ScalarNode:
			e.values = []string{v.Value}
		case v.Kind == yaml.SequenceNode: // a repeatable flag
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("--config %s line %d: key %q: a list may hold only plain values", path, item.Line, k.Value)
				}
				e.values = append(e.values, item.Value)
			}
		default:
			return nil, fmt.Errorf("--config %s line %d: key %q: want a plain value, not a %s (nested settings are not supported)", path, k.Line, k.Value, kindName(v.Kind))
		}
		out = append(out, e)
	}
	return out, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return "plain value"
}

// applyConfig applies the file named by fs's --config to the flags that
// neither the command line nor their environment variables set, and
// returns every flag's setting. A key that is neither a flag of fs nor
// accepted by known is an error naming the key and the file; known may be
// nil (every key must be one of fs's flags).
func applyConfig(fs *flag.FlagSet, known func(key string) bool) (map[string]setting, error) {
	onCmdLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCmdLine[f.Name] = true })
	byEnv := map[string]string{} // environment variable -> flag
	fs.VisitAll(func(f *flag.Flag) {
		for _, n := range flagEnvNames(f) {
			byEnv[n] = f.Name
		}
	})
	set := map[string]setting{}
	fs.VisitAll(func(f *flag.Flag) {
		s := setting{Name: f.Name, Source: sourceDefault}
		if onCmdLine[f.Name] {
			s.Source = sourceFlag
		} else if n := envSetFor(f); n != "" {
			s.Source, s.From = sourceEnv, n
		}
		set[f.Name] = s
	})
	path := ""
	if f := fs.Lookup("config"); f != nil {
		path = f.Value.String()
	}
	if path != "" && !configSkip[fs.Name()] {
		entries, err := readConfigFile(path)
		if err != nil {
			return nil, err
		}
		seen := map[string]int{}
		for _, e := range entries {
			name := e.key
			if fs.Lookup(name) == nil {
				name = byEnv[e.key]
			}
			switch {
			case name == "" && known != nil && known(e.key):
				continue // another command's key (serve's): not for this one
			case name == "":
				return nil, fmt.Errorf("--config %s line %d: unknown key %q: not a flag of `%s` nor its environment variable name (see `%s -h`)", path, e.line, e.key, fs.Name(), fs.Name())
			case name == "config":
				return nil, fmt.Errorf("--config %s line %d: key %q: a config file cannot name another one", path, e.line, e.key)
			case secretFlags[name] != "":
				return nil, fmt.Errorf("--config %s line %d: key %q is a secret and is not read from a config file: set %s", path, e.line, e.key, secretFlags[name])
			case seen[name] != 0:
				return nil, fmt.Errorf("--config %s line %d: key %q sets --%s again (first on line %d): keep one", path, e.line, e.key, name, seen[name])
			}
			seen[name] = e.line
			if s := set[name]; s.Source != sourceDefault {
				continue // the command line or the environment wins
			}
			for _, v := range e.values {
				if err := fs.Set(name, v); err != nil {
					return nil, fmt.Errorf("--config %s line %d: key %q: %q is not %s: %v", path, e.line, e.key, v, flagType(fs.Lookup(name)), err)
				}
			}
			set[name] = setting{Name: name, Source: sourceFile, From: fmt.Sprintf("%s:%d", path, e.line)}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		s := set[f.Name]
		s.Value = f.Value.String()
		set[f.Name] = s
	})
	return set, nil
}

// flagType describes the values f accepts, for error messages.
func flagType(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "true or false"
	}
	name, _ := flag.UnquoteUsage(f)
	switch name {
	case "int", "int64", "uint", "uint64":
		return "an integer"
	case "float":
		return "a number"
	case "duration":
		return "a duration such as 500ms, 30s or 5m"
	case "string":
		return "a string"
	case "size":
		return "a size such as 512MiB or 2GiB"
	}
	return "a valid value"
}

// serveFlagSet returns serve's flag set, registered but not parsed: config
// show and the key check of other commands use it without running a
// worker.
func serveFlagSet() *flag.FlagSet { return newServeFlags().fs }

// serveKnows reports whether key is one of serve's flags or their
// environment variable names: such keys in a shared config file are left
// alone by commands that do not have them.
func serveKnows() func(string) bool {
	var names map[string]bool
	return func(key string) bool {
		if names == nil {
			names = map[string]bool{}
			if fs := serveFlagSet(); fs != nil {
				fs.VisitAll(func(f *flag.Flag) {
					names[f.Name] = true
					for _, n := range flagEnvNames(f) {
						names[n] = true
					}
				})
			}
		}
		return names[key]
	}
}

// runConfig runs `memindex config show`.
func runConfig(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "show" {
		return errors.New("usage: memindex config show [--config FILE] [serve flags] [--json]")
	}
	args = args[1:]
	asJSON := false
	var serveArgs []string
	for _, a := range args {
		switch a {
		case "--json", "-json", "--json=true", "-json=true":
			asJSON = true
		case "--json=false", "-json=false":
			asJSON = false
		default:
			serveArgs = append(serveArgs, a)
		}
	}
	fs := serveFlagSet()
	if err := fs.Parse(serveArgs); err != nil {
		return err
	}
	set, err := applyConfig(fs, nil)
	if err != nil {
		return err
	}
	return printConfig(stdout, fs, set, asJSON)
}

// effectiveSettings returns the settings to show, sorted by name, with
// secrets redacted and credentials in URLs removed; the secrets that come
// only from the environment (passwords, tokens, provider keys) are listed
// as present or not, never with their value.
func effectiveSettings(fs *flag.FlagSet, set map[string]setting) []setting {
	var out []setting
	for _, s := range set {
		switch {
		case secretFlags[s.Name] != "":
			if s.Value != "" {
				s.Value = redacted
				break
			}
			for _, n := range strings.Split(secretFlags[s.Name], " or ") {
				if os.Getenv(n) != "" {
					s.Value, s.Source, s.From = redacted, sourceEnv, n
					break
				}
			}
		case strings.Contains(s.Value, "://"):
			s.Value = natsconn.RedactURL(s.Value)
		}
		out = append(out, s)
	}
	if f := fs.Lookup("embedder"); f != nil {
		for _, n := range embedder.KeyEnv[f.Value.String()] {
			s := setting{Name: n, Source: sourceDefault}
			switch {
			case os.Getenv(n) != "":
				s.Value, s.Source, s.From = redacted, sourceEnv, n
			case os.Getenv(n+"_FILE") != "":
				s.Value, s.Source, s.From = redacted, sourceEnv, n+"_FILE"
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func printConfig(w io.Writer, fs *flag.FlagSet, set map[string]setting, asJSON bool) error {
	settings := effectiveSettings(fs, set)
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Type     string    `json:"type"`
			Settings []setting `json:"settings"`
		}{"config", settings})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tSOURCE")
	for _, s := range settings {
		src := s.Source
		if s.From != "" {
			src += " " + s.From
		}
		v := s.Value
		if v == "" {
			v = `""`
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, v, src)
	}
	return tw.Flush()
}
