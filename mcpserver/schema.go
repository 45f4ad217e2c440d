package mcpserver

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// inputSchema is the JSON Schema the SDK would infer for In (properties
// from the JSON names, descriptions from the jsonschema tags, fields
// without omitempty required), narrowed by tune: enums and bounds the tags
// cannot say. It panics on a type the inference cannot handle, a mistake in
// this package.
func inputSchema[In any](tune func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: input schema: %v", err))
	}
	if tune != nil {
		tune(s.Properties)
	}
	return s
}

// enum is the values of a string enum.
func enum(vals ...string) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out
}

// between bounds a number property to [lo, hi].
func between(s *jsonschema.Schema, lo, hi float64) {
	s.Minimum, s.Maximum = &lo, &hi
}

// atLeast bounds a number property from below.
func atLeast(s *jsonschema.Schema, lo float64) { s.Minimum = &lo }

// timeFormat marks a string property as an RFC 3339 time.
func timeFormat(s *jsonschema.Schema) { s.Format = "date-time" }
