package cliconfig

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// Entry is one key of a config file: the key, its line, and its value (a
// list's items for a repeatable flag).
type Entry struct {
	Key    string
	Line   int
	Values []string
}

// ReadFile reads the YAML mapping of flag names to values in path. Errors
// name the file, and the line and key when there is one.
func ReadFile(path string) ([]Entry, error) {
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
	var out []Entry
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		e := Entry{Key: k.Value, Line: k.Line}
		switch {
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
			return nil, fmt.Errorf("--config %s line %d: key %q has no value: give one or remove the key", path, k.Line, k.Value)
		case v.Kind == yaml.ScalarNode:
			e.Values = []string{v.Value}
		case v.Kind == yaml.SequenceNode: // a repeatable flag
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("--config %s line %d: key %q: a list may hold only plain values", path, item.Line, k.Value)
				}
				e.Values = append(e.Values, item.Value)
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
