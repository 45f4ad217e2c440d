package schemas_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"memindex"
)

// wireType is one Go wire type and where its schema is.
type wireType struct {
	loc string // schema file, optionally with a JSON pointer
	typ reflect.Type
	// reply: the worker (or client) produces it with encoding/json, so
	// every field without omitempty is always present: required.
	reply bool
}

// wireTypes is every Go type that crosses the wire and its schema. A new
// wire type gets a line here; a new field of one of them fails
// TestSchemasListEveryField until its schema has the property.
var wireTypes = []wireType{
	{"event", reflect.TypeFor[memindex.Event](), false},
	{"event#/$defs/eventMessage", reflect.TypeFor[memindex.Message](), false},
	{"search-request", reflect.TypeFor[memindex.SearchRequest](), false},
	{"read-request", reflect.TypeFor[memindex.ReadRequest](), false},
	{"search-response", reflect.TypeFor[memindex.SearchResponse](), true},
	{"search-response#/$defs/hit", reflect.TypeFor[memindex.Hit](), true},
	{"search-response#/$defs/contextMessage", reflect.TypeFor[memindex.ContextMessage](), true},
	{"search-response#/$defs/hitScores", reflect.TypeFor[memindex.HitScores](), true},
	{"search-response#/$defs/legs", reflect.TypeFor[memindex.Legs](), true},
	{"search-response#/$defs/leg", reflect.TypeFor[memindex.Leg](), true},
	{"search-response#/$defs/usage", reflect.TypeFor[memindex.Usage](), true},
	{"search-response#/$defs/stage", reflect.TypeFor[memindex.Stage](), true},
	{"defs#/$defs/fallbackInfo", reflect.TypeFor[memindex.FallbackInfo](), true},
	{"read-response", reflect.TypeFor[memindex.ReadResponse](), true},
	{"read-response#/$defs/readMessage", reflect.TypeFor[memindex.ReadMessage](), true},
	{"status-response", reflect.TypeFor[memindex.StatusResponse](), true},
	{"status-response#/$defs/embedderStatus", reflect.TypeFor[memindex.EmbedderStatus](), true},
	{"status-response#/$defs/partitionStatus", reflect.TypeFor[memindex.PartitionStatus](), true},
	{"status-response#/$defs/switchStatus", reflect.TypeFor[memindex.SwitchStatus](), true},
	{"status-response#/$defs/memoryStatus", reflect.TypeFor[memindex.MemoryStatus](), true},
	{"health-response", reflect.TypeFor[memindex.HealthResponse](), true},
	{"error", reflect.TypeFor[memindex.ErrorBody](), true},
}

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	name      string
	omitempty bool
	typ       reflect.Type
	index     int
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty"), typ: f.Type, index: i})
	}
	return out
}

func locOf(t reflect.Type) (string, bool) {
	for _, w := range wireTypes {
		if w.typ == t {
			return w.loc, true
		}
	}
	return "", false
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestSchemasListEveryField: each schema's properties are exactly its Go
// type's JSON field names; a reply's required fields are exactly those
// without omitempty (encoding/json always writes them); and a field of a
// wire struct type refers to that type's schema.
func TestSchemasListEveryField(t *testing.T) {
	for _, w := range wireTypes {
		t.Run(w.loc, func(t *testing.T) {
			raw := rawAt(t, w.loc)
			props, _ := raw["properties"].(map[string]any)
			var want, required []string
			for _, f := range jsonFields(w.typ) {
				want = append(want, f.name)
				if !f.omitempty {
					required = append(required, f.name)
				}
			}
			sort.Strings(want)
			sort.Strings(required)
			if got := keys(props); !slices.Equal(got, want) {
				t.Fatalf("properties of %s = %v, want the JSON fields of %v: %v", w.loc, got, w.typ, want)
			}
			if w.reply {
				var got []string
				for _, r := range raw["required"].([]any) {
					got = append(got, r.(string))
				}
				sort.Strings(got)
				if !slices.Equal(got, required) {
					t.Errorf("required of %s = %v, want the fields of %v without omitempty: %v", w.loc, got, w.typ, required)
				}
			}
			file, _, _ := strings.Cut(w.loc, "#")
			for _, f := range jsonFields(w.typ) {
				elem := f.typ
				prop := props[f.name].(map[string]any)
				for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice {
					if elem.Kind() == reflect.Slice {
						if items, ok := prop["items"].(map[string]any); ok {
							prop = items
						}
					}
					elem = elem.Elem()
				}
				wantLoc, ok := locOf(elem)
				if !ok {
					continue
				}
				ref, _ := prop["$ref"].(string)
				if got := resolveRef(file, ref); got != wantLoc {
					t.Errorf("%s.%s refers to %q, want the schema of %v, %q", w.loc, f.name, got, elem, wantLoc)
				}
			}
		})
	}
}

// plausible holds the values fill gives fields that a schema constrains,
// keyed "GoType.jsonName"; "*.jsonName" applies to every type.
var plausible = map[string]any{
	"*.namespace":                     "agent-7",
	"*.timestamp":                     "2026-11-30T09:12:00Z",
	"*.role":                          "assistant",
	"*.version":                       1,
	"Event.type":                      memindex.TypeMessage,
	"Event.seq":                       12,
	"SearchRequest.type":              "search",
	"SearchRequest.k":                 10,
	"SearchRequest.minScore":          0.25,
	"SearchRequest.sources":           []string{memindex.SourceSessions, memindex.SourceRecords},
	"SearchRequest.after":             "2026-01-01T00:00:00Z",
	"SearchRequest.before":            "2026-12-01T00:00:00.5+01:00",
	"SearchRequest.updatedAfter":      "2026-02-01T00:00:00Z",
	"SearchRequest.mode":              memindex.ModeKeyword,
	"SearchRequest.fusion":            memindex.FusionWeighted,
	"SearchRequest.mmrLambda":         0.7,
	"SearchRequest.halfLifeHours":     24.5,
	"SearchRequest.budget":            5,
	"SearchRequest.budgetTokens":      400,
	"SearchRequest.around":            2,
	"ReadRequest.type":                "read",
	"ReadRequest.count":               20,
	"SearchResponse.type":             "search.result",
	"Hit.source":                      memindex.SourceSessions,
	"ContextMessage.context":          true,
	"Usage.stopped":                   "budgetTokens",
	"ReadResponse.type":               "read.result",
	"StatusResponse.type":             "status",
	"EmbedderStatus.breaker":          "half-open",
	"EmbedderStatus.breakerOpenUntil": "2026-11-30T09:13:00Z",
	"PartitionStatus.vectorMode":      memindex.VectorModeGoScan,
	"PartitionStatus.role":            memindex.RoleReplica,
	"PartitionStatus.state":           memindex.StateCatchingUp,
	"HealthResponse.type":             "health",
	"HealthResponse.status":           memindex.HealthDegraded,
	"ErrorBody.code":                  memindex.CodeOverloaded,
}

// fill returns a value of t with every field set: a plausible value where
// the schema constrains it, otherwise one derived from the field's name
// and kind (strings "v-<name>", numbers 3 or 0.5, true, one element).
func fill(t reflect.Type, name string) reflect.Value {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Struct:
		for _, f := range jsonFields(t) {
			fv := v.Field(f.index)
			if p, ok := plausible[t.Name()+"."+f.name]; ok {
				setJSON(fv, p)
			} else if p, ok := plausible["*."+f.name]; ok && f.typ.Kind() != reflect.Slice {
				setJSON(fv, p)
			} else {
				fv.Set(fill(f.typ, f.name))
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		v.Elem().Set(fill(t.Elem(), name))
	case reflect.Slice:
		v.Set(reflect.Append(reflect.MakeSlice(t, 0, 1), fill(t.Elem(), name)))
	case reflect.String:
		v.SetString("v-" + name)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(3)
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Bool:
		v.SetBool(true)
	default:
		panic("fill: no rule for " + t.String())
	}
	return v
}

func setJSON(v reflect.Value, x any) {
	b, _ := json.Marshal(x)
	if err := json.Unmarshal(b, v.Addr().Interface()); err != nil {
		panic(err)
	}
}

// wrongJSONType is a value of another JSON type than t marshals to, which
// encoding/json refuses to decode into t.
func wrongJSONType(t reflect.Type) any {
	switch t.Kind() {
	case reflect.String:
		return 7
	case reflect.Slice:
		return map[string]any{"a": 1}
	case reflect.Struct, reflect.Pointer:
		return []int{1}
	default: // numbers and booleans
		return "7"
	}
}

// TestGeneratedExamplesRoundTrip: for every wire type, a value with every
// field filled marshals to JSON the schema accepts and unmarshals back to
// the same value; every field set to a value of another JSON type is
// refused by the schema as by encoding/json; a reply without one of its
// required fields is refused.
func TestGeneratedExamplesRoundTrip(t *testing.T) {
	for _, w := range wireTypes {
		t.Run(w.loc, func(t *testing.T) {
			s := schemaAt(t, w.loc)
			full := fill(w.typ, "")
			data := mustJSON(t, full.Interface())
			if err := validate(s, data); err != nil {
				t.Fatalf("full %v %s: schema says %v", w.typ, data, err)
			}
			back := reflect.New(w.typ)
			if err := json.Unmarshal(data, back.Interface()); err != nil {
				t.Fatalf("json.Unmarshal(%s)=%v", data, err)
			}
			if !reflect.DeepEqual(back.Elem().Interface(), full.Interface()) {
				t.Fatalf("round trip of %s: got %+v, want %+v", data, back.Elem().Interface(), full.Interface())
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(data, &obj); err != nil {
				t.Fatal(err)
			}
			for _, f := range jsonFields(w.typ) {
				mutated := clone(obj)
				mutated[f.name] = mustJSON(t, wrongJSONType(f.typ))
				b := mustJSON(t, mutated)
				if err := validate(s, b); err == nil {
					t.Errorf("%s with %s of the wrong JSON type %s: schema accepts it", w.loc, f.name, mutated[f.name])
				}
				if err := json.Unmarshal(b, reflect.New(w.typ).Interface()); err == nil {
					t.Errorf("%s with %s = %s: encoding/json accepts it (the test's wrong value is not wrong)", w.loc, f.name, mutated[f.name])
				}
				if w.reply && !f.omitempty {
					without := clone(obj)
					delete(without, f.name)
					if err := validate(s, mustJSON(t, without)); err == nil {
						t.Errorf("%s without its required %s: schema accepts it", w.loc, f.name)
					}
				}
			}
		})
	}
}

func clone(m map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
