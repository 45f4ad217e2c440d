package importer_test

import (
	"reflect"
	"strings"
	"testing"

	"memindex/importer"
)

// FuzzParseMapping: ParseMapping never panics; a mapping it accepts prints
// (String) as text that parses to the same mapping, and mapping a line
// with either gives the same event or the same error, never a message
// without text.
func FuzzParseMapping(f *testing.F) {
	line := `{"conversation":{"id":"c1"},"message_id":42,"author":{"role":"user","name":"Ben"},"content":{"parts":["one",{"type":"text","text":"two"}]},"create_time":1795857120.5,"a b":{"c":[1,"x"]}}`
	for _, s := range []string{
		"text=.content",
		exportMap,
		`text=.a.b[0], speaker = .role , sessionkey="x,y", id=`,
		`text=.["odd key"].parts[].text,seq=`,
		`text=.["a b"].c[1],sessionKey="k",sessionId="s"`,
		`text=.content.parts[],seq=.message_id`,
		`text=.a..b`, `text=.a[`, `sessionKey="\u00e9\n"`, `,,,`, `text=.a[99999999999999999999]`,
	} {
		f.Add(s, line)
	}
	f.Fuzz(func(t *testing.T, spec, line string) {
		m, err := importer.ParseMapping(spec)
		if err != nil {
			return
		}
		m2, err := importer.ParseMapping(m.String())
		if err != nil {
			t.Fatalf("ParseMapping(%q).String() = %q does not parse: %v", spec, m.String(), err)
		}
		if m2.String() != m.String() {
			t.Fatalf("round trip of %q: %q then %q", spec, m.String(), m2.String())
		}
		ev, err := m.Event([]byte(line))
		ev2, err2 := m2.Event([]byte(line))
		if !reflect.DeepEqual(ev, ev2) || (err == nil) != (err2 == nil) {
			t.Fatalf("the two mappings of %q differ on %s: %+v %v / %+v %v", spec, line, ev, err, ev2, err2)
		}
		if err == nil && strings.TrimSpace(ev.Text) == "" {
			t.Fatalf("Event of %s through %q has no text", line, spec)
		}
	})
}
