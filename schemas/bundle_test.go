package schemas_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"memindex/schemas"
)

// TestBundleStandsAlone: each bundled schema compiles in a compiler that
// holds nothing else, and judges the cases as the files do.
func TestBundleStandsAlone(t *testing.T) {
	cases := map[string][]agreeCase{"event": append(append([]agreeCase{}, minimalEvents...), eventCases...),
		"search-request": searchCases, "read-request": readCases}
	for _, s := range schemas.List() {
		if s.Name == schemas.Defs {
			continue
		}
		data, err := schemas.Bundle(s.Name)
		if err != nil {
			t.Fatalf("Bundle(%s)=%v", s.Name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Bundle(%s) is no JSON: %v", s.Name, err)
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		c.UseLoader(refuseLoader{})
		if err := c.AddResource("bundle.json", doc); err != nil {
			t.Fatal(err)
		}
		bundled, err := c.Compile("bundle.json")
		if err != nil {
			t.Fatalf("compile Bundle(%s) alone: %v", s.Name, err)
		}
		for _, k := range cases[s.Name] {
			if got, want := bundled.Validate(mustValue(t, k.json)) == nil, validate(schemaAt(t, s.Name), []byte(k.json)) == nil; got != want {
				t.Errorf("Bundle(%s) on %q: valid %v, the file says %v", s.Name, k.name, got, want)
			}
		}
	}
	if _, err := schemas.Get("../doc.go"); !errors.Is(err, schemas.ErrUnknown) {
		t.Errorf("Get(../doc.go)=%v, want ErrUnknown", err)
	}
}

func mustValue(t *testing.T, s string) any {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(s)))
	if err != nil {
		return s // not JSON: judged as a string, invalid to every schema
	}
	return v
}

// refuseLoader fails every load: a bundle must need none.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) { return nil, errors.New("no loading: " + url) }
