package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"memindex/schemas"
)

// runSchema lists the wire schemas, or prints one.
func runSchema(args []string, stdout io.Writer) error {
	fs := newFlagSet("schema", "[--bundle] [NAME]")
	bundle := fs.Bool("bundle", false, "print the schema with the shared definitions (defs) inlined, as one self-contained document")
	asJSON := fs.Bool("json", false, "list the schemas as JSON")
	var names []string
	for { // flags before and after the name
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		names, args = append(names, fs.Arg(0)), fs.Args()[1:]
	}
	switch len(names) {
	case 0:
		list := schemas.List()
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(list)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, s := range list {
			fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Title)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintln(stdout, "\n'memindex schema NAME' prints one (--bundle: self-contained); the files are schemas/NAME.schema.json.")
		return err
	case 1:
		get := schemas.Get
		if *bundle {
			get = schemas.Bundle
		}
		data, err := get(names[0])
		if err != nil {
			return err
		}
		_, err = stdout.Write(data)
		return err
	default:
		return fmt.Errorf("one schema name at most, got %d: %v", len(names), names)
	}
}
