package evalcorpus

import (
	"strings"
	"testing"
)

// TestKinds checks each fact kind's templates: event kinds date every
// statement, nothing else carries the date, every question finds evidence
// whichever way the fact is told, and there is enough variety.
func TestKinds(t *testing.T) {
	for lang, b := range banks {
		for _, k := range b.kinds {
			t.Run(lang+"/"+k.name, func(t *testing.T) {
				for _, tm := range append(append([]string{}, k.tell...), k.full...) {
					if mentions(tm, "rel") != k.event {
						t.Errorf("statement %q: dated=%v, want %v", tm, !k.event, k.event)
					}
				}
				for _, tm := range concat(k.more, k.noise, k.ask, k.probe) {
					if mentions(tm, "rel") {
						t.Errorf("%q carries the date", tm)
					}
				}
				qs := k.qs
				if k.multi != nil {
					qs = append(qs[:len(qs):len(qs)], *k.multi)
				}
				for _, q := range qs {
					about := func(tm string) bool {
						for _, a := range q.about {
							if mentions(tm, a) {
								return true
							}
						}
						return false
					}
					for _, f := range k.full {
						if !about(f) {
							t.Errorf("question %q: no evidence when told as %q", q.texts[0], f)
						}
					}
					for _, tl := range k.tell {
						if len(k.more) == 0 && !about(tl) {
							t.Errorf("question %q: no evidence when told as %q", q.texts[0], tl)
						}
						for _, m := range k.more {
							if !about(tl) && !about(m) {
								t.Errorf("question %q: no evidence when told as %q + %q", q.texts[0], tl, m)
							}
						}
					}
					if q.cat == CategoryTemporal && !k.event {
						t.Errorf("temporal question %q of an undated kind", q.texts[0])
					}
				}
				n := len(concat(k.tell, k.full, k.more, k.noise, k.ask, k.probe))
				for _, q := range qs {
					n += len(q.texts)
				}
				if n < 15 {
					t.Errorf("%d templates, want at least 15", n)
				}
			})
		}
	}
}

// TestChineseTemplatesHaveNoSpaces checks every Chinese template and value.
func TestChineseTemplatesHaveNoSpaces(t *testing.T) {
	b := banks["zh"]
	all := concat(b.people, b.kids, b.withKids, b.withAny, b.greet, b.greetBack, b.bye, b.byeBack,
		b.remarks, b.acks, b.reacts, b.asks, b.probes, b.shrugs)
	for _, e := range b.small {
		all = append(all, e.q)
		all = append(all, e.a...)
	}
	for _, r := range b.rels {
		all = append(all, r.text, r.ask)
	}
	for _, k := range b.kinds {
		all = append(all, concat(k.tell, k.full, k.more, k.noise, k.ask, k.probe)...)
		for _, s := range k.slots {
			all = append(all, s.values...)
		}
		for _, q := range k.qs {
			all = append(all, q.texts...)
			all = append(all, q.answer)
		}
	}
	for _, s := range all {
		if strings.Contains(s, " ") {
			t.Errorf("%q has a space", s)
		}
	}
}

func TestRender(t *testing.T) {
	vals := map[string]string{"p": "Ana", "his": "her", "with.1": "{his} sister"}
	for _, tc := range []struct {
		name, in, want, missing string
	}{
		{"plain", "hello", "hello", ""},
		{"nested", "{p} and {with.1}", "Ana and her sister", ""},
		{"missing", "{p} {x}", "", "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, missing := render(tc.in, vals)
			if got != tc.want || missing != tc.missing {
				t.Fatalf("render(%q)=%q,%q, want %q,%q", tc.in, got, missing, tc.want, tc.missing)
			}
		})
	}
}

func TestMentions(t *testing.T) {
	for _, tc := range []struct {
		tmpl, key string
		want      bool
	}{
		{"a {x} b", "x", true},
		{"a {x.1} b", "x", false},
		{"a {x.1} b", "x.*", true},
		{"a {x.1} b", "x.1", true},
		{"{Rel} we went", "rel", true},
		{"a {xy} b", "x.*", false},
	} {
		if got := mentions(tc.tmpl, tc.key); got != tc.want {
			t.Errorf("mentions(%q, %q)=%v, want %v", tc.tmpl, tc.key, got, tc.want)
		}
	}
}

func concat(xs ...[]string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}
