package evalcorpus

import (
	"fmt"
	"slices"
	"time"
)

// events returns the conversation's messages as events.
func (c *conv) events() []Event {
	out := make([]Event, 0, len(c.msgs))
	seq := 0
	for i, m := range c.msgs {
		if i == 0 || c.msgs[i-1].session != m.session {
			seq = 0
		}
		seq++
		id := fmt.Sprintf("D%d:%d", m.session+1, seq)
		role := "assistant"
		if m.speaker == 0 {
			role = "user"
		}
		out = append(out, Event{
			SessionKey: c.key,
			SessionID:  fmt.Sprintf("session_%d", m.session+1),
			Seq:        seq,
			ConvSeq:    i + 1,
			MessageID:  id,
			EventID:    c.key + "/" + id,
			Role:       role,
			Speaker:    c.people[m.speaker].name,
			Text:       m.text,
			Timestamp:  c.sessions[m.session].date.Format(time.RFC3339),
		})
	}
	return out
}

// A draft is a question before its id is known.
type draft struct {
	q    Query
	gold []int // message indexes
}

// questions asks one or two questions about each fact and one multi-hop
// question about each kind one person told of more than once.
func (c *conv) questions() []Query {
	var drafts []draft
	byKind := map[string][]*fact{}
	var order []string
	for _, f := range c.facts {
		tk := fmt.Sprint(f.teller, "/", f.k.name)
		if len(byKind[tk]) == 0 {
			order = append(order, tk)
		}
		byKind[tk] = append(byKind[tk], f)
	}
	for _, f := range c.facts {
		twice := len(byKind[fmt.Sprint(f.teller, "/", f.k.name)]) > 1
		var ok []question
		for _, q := range f.k.qs {
			if q.cat == CategoryTemporal && !f.k.event {
				continue
			}
			// With two facts of a kind, only questions naming the key
			// tell them apart.
			if twice && !mentions(q.texts[0], f.k.slots[0].name+".*") {
				continue
			}
			// Keyed temporal questions are easy; keep few of them.
			if twice && q.cat == CategoryTemporal && c.r.IntN(2) == 0 {
				continue
			}
			ok = append(ok, q)
		}
		c.r.Shuffle(len(ok), func(i, j int) { ok[i], ok[j] = ok[j], ok[i] })
		// Temporal questions mostly come last, so that they are about a
		// quarter of all, as in LoCoMo.
		if c.r.IntN(4) != 0 {
			slices.SortStableFunc(ok, func(a, b question) int {
				return btoi(a.cat == CategoryTemporal) - btoi(b.cat == CategoryTemporal)
			})
		}
		n := 1
		if c.r.IntN(5) < 2 {
			n = 2
		}
		for _, q := range ok[:min(n, len(ok))] {
			if d, good := c.ask(q, []*fact{f}); good {
				drafts = append(drafts, d)
			}
		}
	}
	for _, tk := range order {
		fs := byKind[tk]
		if len(fs) < 2 || fs[0].k.multi == nil {
			continue
		}
		if len(fs) == 3 && c.r.IntN(3) != 0 {
			fs = fs[:2]
		}
		if d, good := c.ask(*fs[0].k.multi, fs); good {
			drafts = append(drafts, d)
		}
	}
	slices.SortStableFunc(drafts, func(a, b draft) int { return slices.Min(a.gold) - slices.Min(b.gold) })
	out := make([]Query, len(drafts))
	for i, d := range drafts {
		d.q.QueryID = fmt.Sprintf("%s/q%04d", c.key, i+1)
		out[i] = d.q
	}
	return out
}

// ask drafts question q about facts fs (one, or several of one kind told by
// one person); the evidence is the facts' messages that mention q.about.
func (c *conv) ask(q question, fs []*fact) (draft, bool) {
	f := fs[0]
	text, missing := render(pick(c.r, q.texts), f.vals)
	if missing != "" {
		c.err = fmt.Errorf("question of %s: no value for %q", f.k.name, missing)
		return draft{}, false
	}
	var answers []string
	var gold []int
	for _, f := range fs {
		n := len(gold)
		for _, s := range f.said {
			if slices.ContainsFunc(q.about, func(k string) bool { return mentions(s.tmpl, k) }) {
				gold = append(gold, s.msg)
			}
		}
		if len(gold) == n {
			return draft{}, false
		}
		a, _ := render(q.answer, f.vals)
		if slices.Contains(q.about, "rel") {
			a = c.b.answer(f.rel, c.sessions[f.session].date)
		}
		answers = append(answers, a)
	}
	slices.Sort(gold)
	ev := c.ev
	d := draft{gold: gold, q: Query{
		SessionKey:   c.key,
		Question:     text,
		Answer:       c.b.join(answers),
		Category:     q.cat,
		CategoryName: CategoryName(q.cat),
	}}
	for _, g := range gold {
		d.q.GoldMessageIDs = append(d.q.GoldMessageIDs, ev[g].MessageID)
		if !slices.Contains(d.q.GoldSessionIDs, ev[g].SessionID) {
			d.q.GoldSessionIDs = append(d.q.GoldSessionIDs, ev[g].SessionID)
		}
	}
	return d, true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
