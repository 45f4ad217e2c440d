package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"memindex/embedder"
	"memindex/internal/cliconfig"
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
// The layering is internal/cliconfig's; this file registers --config, says
// which commands read the file, and prints `memindex config show`.

// configSkip are commands whose flags share names with serve's but not their
// meaning (bench and eval build their own throw-away workers), so a serve
// config file must not steer them.
// mcp applies the file itself (parseMCPArgs): serve's "http" key is not its --http.
var configSkip = map[string]bool{"memindex bench": true, "memindex eval": true, "memindex mcp": true}

// addConfigFlag registers --config on fs unless it has one.
func addConfigFlag(fs *flag.FlagSet) {
	if fs.Lookup("config") == nil {
		fs.String("config", env("MEMINDEX_CONFIG", ""), "YAML file of settings (flag names or their environment variable names as keys); flags and environment variables override it (MEMINDEX_CONFIG)")
	}
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
			names = cliconfig.Keys(serveFlagSet())
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
	set, err := cliconfig.Apply(fs, nil)
	if err != nil {
		return err
	}
	var keyEnv []string
	if f := fs.Lookup("embedder"); f != nil {
		keyEnv = embedder.KeyEnv[f.Value.String()]
	}
	return printConfig(stdout, cliconfig.Effective(set, keyEnv), asJSON)
}

func printConfig(w io.Writer, settings []cliconfig.Setting, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Type     string              `json:"type"`
			Settings []cliconfig.Setting `json:"settings"`
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
