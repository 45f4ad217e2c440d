package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// BaseURI is the base of every schema's $id: a schema named NAME has the
// $id BaseURI+NAME+".schema.json". The ids identify, they are not fetched
// (memindex.invalid never resolves): load the files themselves.
const BaseURI = "https://memindex.invalid/schemas/v1/"

// Defs is the name of the file of shared definitions the others refer to.
const Defs = "defs"

// ErrUnknown is returned by Get and Bundle for a name that is no schema.
var ErrUnknown = errors.New("unknown schema")

//go:embed *.schema.json
var files embed.FS

// FS returns the schema files, named NAME.schema.json.
func FS() fs.FS { return files }

// Schema describes one schema file.
type Schema struct {
	// Name is the file's name without ".schema.json", e.g. "event".
	Name string `json:"name"`
	// ID is its $id.
	ID string `json:"id"`
	// Title is its title.
	Title string `json:"title"`
}

// List returns every schema, the shared definitions last.
func List() []Schema {
	entries, _ := fs.Glob(files, "*.schema.json") // a constant pattern: no error
	out := make([]Schema, 0, len(entries))
	for _, e := range entries {
		name := strings.TrimSuffix(e, ".schema.json")
		var head struct {
			ID    string `json:"$id"`
			Title string `json:"title"`
		}
		data, _ := files.ReadFile(e)
		_ = json.Unmarshal(data, &head) // the tests parse every file
		out = append(out, Schema{Name: name, ID: head.ID, Title: head.Title})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name != Defs && out[j].Name == Defs })
	return out
}

// Get returns the schema file name (with or without ".schema.json") as
// it is in the repository.
func Get(name string) ([]byte, error) {
	name = strings.TrimSuffix(name, ".schema.json")
	data, err := files.ReadFile(name + ".schema.json")
	if err != nil || strings.ContainsAny(name, "/\\") {
		names := make([]string, 0, 10)
		for _, s := range List() {
			names = append(names, s.Name)
		}
		return nil, fmt.Errorf("%w %q: want one of %s", ErrUnknown, name, strings.Join(names, ", "))
	}
	return data, nil
}

// Bundle returns the schema name as one self-contained document: the
// shared definitions are embedded under $defs["memindex-defs"] with their
// own $id, so a validator resolves every reference without loading
// another file (JSON Schema 2020-12 bundling). Keys come out sorted.
func Bundle(name string) ([]byte, error) {
	data, err := Get(name)
	if err != nil {
		return nil, err
	}
	if strings.TrimSuffix(name, ".schema.json") == Defs {
		return data, nil
	}
	doc, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", name, err)
	}
	defs, err := decode(mustGet(Defs))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", name, err)
	}
	delete(defs, "$schema") // an embedded resource shares its parent's dialect
	sub, _ := doc["$defs"].(map[string]any)
	if sub == nil {
		sub = map[string]any{}
		doc["$defs"] = sub
	}
	sub["memindex-defs"] = defs
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

func mustGet(name string) []byte {
	data, err := files.ReadFile(name + ".schema.json")
	if err != nil {
		panic(err) // embedded: present when the package compiled
	}
	return data
}

// decode parses a schema keeping its numbers exact (json.Number).
func decode(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}
