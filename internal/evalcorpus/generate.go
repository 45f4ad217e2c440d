package evalcorpus

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// banks holds the template banks by language.
var banks = map[string]*bank{"en": &bankEN, "zh": &bankZH}

// Generate builds the corpus of c. Conversation i depends only on c.Lang,
// c.Seed and i, so a smaller Conversations gives a prefix of a larger one.
func Generate(c Config) (Corpus, error) {
	if err := c.Validate(); err != nil {
		return Corpus{}, err
	}
	c = c.withDefaults()
	b := banks[c.Lang]
	out := Corpus{Name: b.name}
	salt := uint64(0x656e) // "en"
	if c.Lang == "zh" {
		salt = 0x7a68
	}
	for i := range c.Conversations {
		cv := &conv{
			b:    b,
			r:    rand.New(rand.NewPCG(c.Seed, salt<<32|uint64(i+1))),
			key:  fmt.Sprintf("gen-%02d", i+1),
			used: map[string]bool{},
		}
		ev, qs, err := cv.build()
		if err != nil {
			return Corpus{}, fmt.Errorf("generate %s: %w", cv.key, err)
		}
		out.Events = append(out.Events, ev...)
		out.Queries = append(out.Queries, qs...)
	}
	return out, nil
}

// conv builds one conversation.
type conv struct {
	b        *bank
	r        *rand.Rand
	key      string
	people   []person
	sessions []session
	facts    []*fact
	msgs     []msg
	ev       []Event         // msgs as events, once written
	used     map[string]bool // "kind/key value" already in a fact
	said     map[string]bool // templates used in the current session
	err      error           // first template error
}

type person struct {
	name, call string
	male       bool
	kid        string // tuple, "" without children
}

type session struct {
	date  time.Time
	size  int
	facts []*fact
}

type fact struct {
	k       *kind
	teller  int
	session int
	vals    map[string]string
	rel     rel
	said    []said
}

// said is one message of a fact, with the template it came from.
type said struct {
	msg  int
	tmpl string
}

type msg struct {
	speaker, session int
	text             string
}

func (c *conv) build() ([]Event, []Query, error) {
	c.cast()
	c.schedule()
	c.plant()
	for s := range c.sessions {
		c.session(s)
	}
	if c.err != nil {
		return nil, nil, c.err
	}
	c.ev = c.events()
	return c.ev, c.questions(), nil
}

// cast picks two people, sometimes three, and their families.
func (c *conv) cast() {
	n := 2
	if c.r.IntN(5) == 0 {
		n = 3
	}
	for _, i := range c.r.Perm(len(c.b.people))[:n] {
		t := c.b.people[i]
		p := person{name: field(t, 0), call: field(t, 1), male: field(t, 2) == "m"}
		if c.r.IntN(2) == 0 {
			p.kid = pick(c.r, c.b.kids)
		}
		c.people = append(c.people, p)
	}
}

// schedule picks the sessions' dates and sizes: 400 to 700 messages over
// 18 to 28 sessions days or weeks apart.
func (c *conv) schedule() {
	total := 400 + c.r.IntN(301)
	n := 18 + c.r.IntN(11)
	d := time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC).AddDate(0, 0, c.r.IntN(500))
	for range n {
		at := d.Add(time.Duration(8*60+c.r.IntN(14*60)) * time.Minute)
		size := total / n * (60 + c.r.IntN(81)) / 100
		c.sessions = append(c.sessions, session{date: at, size: max(size, 8)})
		d = d.AddDate(0, 0, 2+c.r.IntN(23))
	}
}

// plant chooses the facts, about one in seven messages, and their sessions.
func (c *conv) plant() {
	total := 0
	for _, s := range c.sessions {
		total += s.size
	}
	told := map[string][]*fact{} // "teller/kind" -> facts
	for tries := 0; len(c.facts) < total/7 && tries < 10*total; tries++ {
		teller := c.r.IntN(len(c.people))
		k := c.chooseKind(teller, told)
		if k == nil {
			continue
		}
		f := c.newFact(k, teller)
		if f == nil {
			continue
		}
		tk := fmt.Sprint(teller, "/", k.name)
		if n := len(told[tk]); n >= 3 || k.multi == nil && n > 0 {
			continue // a birthday or a promotion is told once
		}
		s, ok := c.freeSession(told[tk])
		if !ok {
			continue
		}
		c.used[k.name+"/"+f.vals[k.slots[0].name]] = true
		f.session = s
		c.sessions[s].facts = append(c.sessions[s].facts, f)
		told[tk] = append(told[tk], f)
		c.facts = append(c.facts, f)
	}
}

// chooseKind picks a kind for teller; a third of the time one the teller
// already told of, so that facts share words and multi-hop questions exist.
func (c *conv) chooseKind(teller int, told map[string][]*fact) *kind {
	if c.r.IntN(4) == 0 {
		var again []*kind
		for i := range c.b.kinds {
			k := &c.b.kinds[i]
			if n := len(told[fmt.Sprint(teller, "/", k.name)]); k.multi != nil && n > 0 && n < 3 {
				again = append(again, k)
			}
		}
		if len(again) > 0 {
			return again[c.r.IntN(len(again))]
		}
	}
	k := &c.b.kinds[c.r.IntN(len(c.b.kinds))]
	if len(told[fmt.Sprint(teller, "/", k.name)]) > 0 && c.r.IntN(2) == 0 {
		k = &c.b.kinds[c.r.IntN(len(c.b.kinds))] // prefer a kind not told yet
	}
	if k.needs == "kids" && c.people[teller].kid == "" {
		return nil
	}
	return k
}

// newFact fills a fact's slots; the key slot takes a value not used yet.
func (c *conv) newFact(k *kind, teller int) *fact {
	f := &fact{k: k, teller: teller, vals: c.personVals(teller)}
	key := k.slots[0]
	var free []string
	for _, v := range key.values {
		if !c.used[k.name+"/"+field(v, 0)] {
			free = append(free, v)
		}
	}
	if len(free) == 0 {
		return nil
	}
	setTuple(f.vals, key.name, pick(c.r, free))
	for _, s := range k.slots[1:] {
		setTuple(f.vals, s.name, pick(c.r, s.values))
	}
	if k.event {
		f.rel = c.b.rels[c.r.IntN(len(c.b.rels))]
		f.vals["rel"] = f.rel.text
		f.vals["Rel"] = upperFirst(f.rel.text)
	}
	return f
}

// personVals returns the placeholders that describe person i.
func (c *conv) personVals(i int) map[string]string {
	p := c.people[i]
	g := 0
	if p.male {
		g = 1
	}
	vals := map[string]string{"p": p.name, "me": p.call, "his": c.b.his[g], "he": c.b.he[g]}
	with := c.b.withAny
	if p.kid != "" {
		setTuple(vals, "kid", p.kid)
		with = append(slices.Clip(with), c.b.withKids...)
	} else {
		vals["kid"], vals["kid.1"] = "", ""
	}
	setTuple(vals, "with", pick(c.r, with))
	return vals
}

// freeSession picks a session with room that holds none of the facts in
// avoid.
func (c *conv) freeSession(avoid []*fact) (int, bool) {
	for range 20 {
		s := c.r.IntN(len(c.sessions))
		if len(c.sessions[s].facts) >= max(1, c.sessions[s].size/6) {
			continue
		}
		if !slices.ContainsFunc(avoid, func(f *fact) bool { return f.session == s }) {
			return s, true
		}
	}
	return 0, false
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// pick returns a template of ts not used in the session yet, if it finds
// one in a few tries.
func (c *conv) pick(ts []string) string {
	t := pick(c.r, ts)
	for i := 0; i < 4 && c.said[t]; i++ {
		t = pick(c.r, ts)
	}
	c.said[t] = true
	return t
}

// others returns the people other than i.
func (c *conv) others(i int) []int {
	var o []int
	for j := range c.people {
		if j != i {
			o = append(o, j)
		}
	}
	return o
}

// other picks someone other than i (anyone when i < 0).
func (c *conv) other(i int) int {
	if i < 0 {
		return c.r.IntN(len(c.people))
	}
	return pick(c.r, c.others(i))
}

// say appends a message from speaker to addressee rendered from tmpl; a
// fact's message is remembered as evidence.
func (c *conv) say(s, speaker, to int, tmpl string, vals map[string]string, f *fact) {
	if vals == nil {
		vals = map[string]string{}
	}
	vals["to"] = c.people[to].call
	text, missing := render(tmpl, vals)
	if strings.HasPrefix(tmpl, "{") {
		text = upperFirst(text)
	}
	if missing != "" && c.err == nil {
		c.err = fmt.Errorf("template %q: no value for %q", tmpl, missing)
	}
	if f != nil {
		f.said = append(f.said, said{msg: len(c.msgs), tmpl: tmpl})
	}
	c.msgs = append(c.msgs, msg{speaker: speaker, session: s, text: strings.TrimSpace(text)})
}

func (c *conv) last() int {
	if len(c.msgs) == 0 {
		return -1
	}
	return c.msgs[len(c.msgs)-1].speaker
}
