package cliconfig

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"memindex/internal/natsconn"
)

// Sources of a setting, as `config show` names them.
const (
	SourceFlag    = "flag"
	SourceEnv     = "env"
	SourceFile    = "file"
	SourceDefault = "default"
)

// Redacted replaces a secret's value wherever a setting is shown.
const Redacted = "[redacted]"

// SecretFlags are flags whose values are secrets, each with the
// environment variables to set it by instead: never shown, and refused in a
// config file (a file is copied and read more than the environment).
var SecretFlags = map[string]string{
	"password": "NATS_PASSWORD or NATS_PASSWORD_FILE",
	"token":    "NATS_TOKEN or NATS_TOKEN_FILE",
}

// envInUsage finds the environment variable names in a flag's usage: a word
// of capitals, digits and at least one underscore inside parentheses.
var (
	usageParens = regexp.MustCompile(`\(([^()]*)\)`)
	envWord     = regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b`)
)

// EnvNames returns the environment variables f falls back to, from its
// usage.
func EnvNames(f *flag.Flag) []string {
	var names []string
	for _, m := range usageParens.FindAllStringSubmatch(f.Usage, -1) {
		names = append(names, envWord.FindAllString(m[1], -1)...)
	}
	return names
}

// EnvSetFor returns the first of f's environment variables that is set (an
// empty value counts as unset), or "".
func EnvSetFor(f *flag.Flag) string {
	for _, n := range EnvNames(f) {
		if v, ok := os.LookupEnv(n); ok && v != "" {
			return n
		}
	}
	return ""
}

// Setting is one flag's effective value and where it came from.
type Setting struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
	// From names the environment variable or file (with its line) when
	// the source is env or file.
	From string `json:"from,omitempty"`
}

// Apply applies the file named by fs's --config flag (none when fs has no
// such flag or it is empty) to the flags that neither the command line nor
// their environment variables set, and returns every flag's setting. A key
// that is neither a flag of fs (or its environment variable name) nor
// accepted by known is an error naming the key and the file; known may be
// nil (every key must be one of fs's).
func Apply(fs *flag.FlagSet, known func(key string) bool) (map[string]Setting, error) {
	onCmdLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCmdLine[f.Name] = true })
	byEnv := map[string]string{} // environment variable -> flag
	fs.VisitAll(func(f *flag.Flag) {
		for _, n := range EnvNames(f) {
			byEnv[n] = f.Name
		}
	})
	set := map[string]Setting{}
	fs.VisitAll(func(f *flag.Flag) {
		s := Setting{Name: f.Name, Source: SourceDefault}
		if onCmdLine[f.Name] {
			s.Source = SourceFlag
		} else if n := EnvSetFor(f); n != "" {
			s.Source, s.From = SourceEnv, n
		}
		set[f.Name] = s
	})
	path := ""
	if f := fs.Lookup("config"); f != nil {
		path = f.Value.String()
	}
	if path != "" {
		entries, err := ReadFile(path)
		if err != nil {
			return nil, err
		}
		seen := map[string]int{}
		for _, e := range entries {
			name := e.Key
			if fs.Lookup(name) == nil {
				name = byEnv[e.Key]
			}
			switch {
			case name == "" && known != nil && known(e.Key):
				continue // another command's key (serve's): not for this one
			case name == "":
				return nil, fmt.Errorf("--config %s line %d: unknown key %q: not a flag of `%s` nor its environment variable name (see `%s -h`)", path, e.Line, e.Key, fs.Name(), fs.Name())
			case name == "config":
				return nil, fmt.Errorf("--config %s line %d: key %q: a config file cannot name another one", path, e.Line, e.Key)
			case SecretFlags[name] != "":
				return nil, fmt.Errorf("--config %s line %d: key %q is a secret and is not read from a config file: set %s", path, e.Line, e.Key, SecretFlags[name])
			case seen[name] != 0:
				return nil, fmt.Errorf("--config %s line %d: key %q sets --%s again (first on line %d): keep one", path, e.Line, e.Key, name, seen[name])
			}
			seen[name] = e.Line
			if s := set[name]; s.Source != SourceDefault {
				continue // the command line or the environment wins
			}
			for _, v := range e.Values {
				if err := fs.Set(name, v); err != nil {
					return nil, fmt.Errorf("--config %s line %d: key %q: %q is not %s: %v", path, e.Line, e.Key, v, FlagType(fs.Lookup(name)), err)
				}
			}
			set[name] = Setting{Name: name, Source: SourceFile, From: fmt.Sprintf("%s:%d", path, e.Line)}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		s := set[f.Name]
		s.Value = f.Value.String()
		set[f.Name] = s
	})
	return set, nil
}

// FlagType describes the values f accepts, for error messages.
func FlagType(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "true or false"
	}
	if _, ok := f.Value.(*AutoSize); ok {
		return "auto or a size such as 512MiB or 2GiB"
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

// Keys returns the names of fs's flags and of their environment variables:
// the keys a config file may give for fs.
func Keys(fs *flag.FlagSet) map[string]bool {
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		names[f.Name] = true
		for _, n := range EnvNames(f) {
			names[n] = true
		}
	})
	return names
}

// Effective returns the settings to show, sorted by name, with secrets
// redacted and credentials in URLs removed; the secrets that come only from
// the environment are listed as present or not, never with their value:
// SecretFlags' variables, and keyEnv (the provider's key variables, each
// also as NAME_FILE).
func Effective(set map[string]Setting, keyEnv []string) []Setting {
	var out []Setting
	for _, s := range set {
		switch {
		case SecretFlags[s.Name] != "":
			if s.Value != "" {
				s.Value = Redacted
				break
			}
			for _, n := range strings.Split(SecretFlags[s.Name], " or ") {
				if os.Getenv(n) != "" {
					s.Value, s.Source, s.From = Redacted, SourceEnv, n
					break
				}
			}
		case strings.Contains(s.Value, "://"):
			s.Value = natsconn.RedactURL(s.Value)
		}
		out = append(out, s)
	}
	for _, n := range keyEnv {
		s := Setting{Name: n, Source: SourceDefault}
		switch {
		case os.Getenv(n) != "":
			s.Value, s.Source, s.From = Redacted, SourceEnv, n
		case os.Getenv(n+"_FILE") != "":
			s.Value, s.Source, s.From = Redacted, SourceEnv, n+"_FILE"
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// IsSet reports whether flag name was given on the command line, in its
// environment variable or by the config file (Apply sets the flag), as
// opposed to left at its default.
func IsSet(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	set := f != nil && EnvSetFor(f) != ""
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
