package schemas_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"memindex/schemas"
)

// The compiler is shared by every test of the package (none runs in
// parallel): each schema compiles once.
var (
	compilerOnce sync.Once
	compilerVal  *jsonschema.Compiler
	compilerErr  error
	rawDocs      map[string]map[string]any
)

// compiler returns a compiler holding every schema file under its $id,
// with formats asserted (a date-time must be one, as Go's check demands).
func compiler(t testing.TB) *jsonschema.Compiler {
	t.Helper()
	compilerOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		rawDocs = map[string]map[string]any{}
		for _, s := range schemas.List() {
			data, err := schemas.Get(s.Name)
			if err != nil {
				compilerErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				compilerErr = fmt.Errorf("%s.schema.json: %w", s.Name, err)
				return
			}
			if err := c.AddResource(schemas.BaseURI+s.Name+".schema.json", doc); err != nil {
				compilerErr = fmt.Errorf("%s.schema.json: %w", s.Name, err)
				return
			}
			rawDocs[s.Name] = doc.(map[string]any)
		}
		compilerVal = c
	})
	if compilerErr != nil {
		t.Fatalf("load schemas: %v", compilerErr)
	}
	return compilerVal
}

// schemaAt compiles the schema at loc: a file name, optionally with a
// JSON pointer ("search-response#/$defs/hit").
func schemaAt(t testing.TB, loc string) *jsonschema.Schema {
	t.Helper()
	c := compiler(t)
	name, frag, _ := strings.Cut(loc, "#")
	url := schemas.BaseURI + name + ".schema.json"
	if frag != "" {
		url += "#" + frag
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compile %s: %v", loc, err)
	}
	return s
}

// validate reports whether data, one JSON value, is valid against s.
func validate(s *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not one JSON value: %w", err)
	}
	return s.Validate(inst)
}

// rawAt returns the raw JSON object at loc (see schemaAt).
func rawAt(t testing.TB, loc string) map[string]any {
	t.Helper()
	compiler(t)
	name, frag, _ := strings.Cut(loc, "#")
	var v any = rawDocs[name]
	if v == nil {
		t.Fatalf("no schema file %s", name)
	}
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: %q is not in an object", loc, tok)
		}
		v = m[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is not a schema object", loc)
	}
	return m
}

// resolveRef returns the location a $ref written in file names
// ("defs.schema.json#/$defs/key", "#/$defs/hit") in schemaAt's form.
func resolveRef(file, ref string) string {
	target, frag, _ := strings.Cut(ref, "#")
	if target == "" {
		target = file
	} else {
		target = strings.TrimSuffix(strings.TrimPrefix(target, schemas.BaseURI), ".schema.json")
	}
	if frag == "" {
		return target
	}
	return target + "#" + frag
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%T)=%v", v, err)
	}
	return b
}

// verdict words an error as a validation verdict.
func verdict(err error) string {
	if err == nil {
		return "valid"
	}
	return "invalid"
}

// firstLine is the first line of a validator's error, for messages.
func firstLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
