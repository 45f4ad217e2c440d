package evalcorpus

import "strings"

// unit is a part of a session: a fact told, or a line that shares a
// fact's words without stating one.
type unit struct {
	f     *fact
	noise *fact // the fact whose words a noise line borrows
}

// session writes session s: a greeting, the session's facts and noise lines
// in small talk, and a goodbye.
func (c *conv) session(s int) {
	start := len(c.msgs)
	c.said = map[string]bool{}
	var units []unit
	for _, f := range c.sessions[s].facts {
		units = append(units, unit{f: f})
	}
	// Noise: about as many lines as facts, borrowing the words of any fact
	// of the conversation, told before or after.
	for range len(c.sessions[s].facts)*3/2 + c.r.IntN(3) {
		units = append(units, unit{noise: pick(c.r, c.facts)})
	}
	c.r.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })

	a := c.r.IntN(len(c.people))
	b := c.other(a)
	c.say(s, a, b, c.pick(c.b.greet), nil, nil)
	c.say(s, b, a, c.pick(c.b.greetBack), nil, nil)
	if len(c.people) == 3 && c.r.IntN(2) == 0 {
		third := 3 - a - b
		c.say(s, third, a, c.pick(c.b.greetBack), nil, nil)
	}

	size := c.sessions[s].size
	est := 4 + 4*len(c.sessions[s].facts) + 2*(len(units)-len(c.sessions[s].facts))
	gaps := len(units) + 1
	budget := max(0, size-est)
	for i := 0; i <= len(units); i++ {
		quota := budget / gaps
		if i < budget%gaps {
			quota++
		}
		// Vary the gaps but keep the total.
		for n := 0; n < quota; {
			n += c.filler(s)
		}
		if i < len(units) {
			if u := units[i]; u.f != nil {
				c.tell(s, u.f)
			} else {
				c.noise(s, u.noise)
			}
		}
	}

	x := c.other(c.last())
	c.say(s, x, c.other(x), c.pick(c.b.bye), nil, nil)
	if c.r.IntN(4) != 0 || len(c.msgs)-start < 4 {
		y := c.other(x)
		c.say(s, y, x, c.pick(c.b.byeBack), nil, nil)
	}
}

// filler writes a small-talk exchange or remark and returns its length.
func (c *conv) filler(s int) int {
	x := c.other(c.last())
	y := c.other(x)
	if c.r.IntN(3) == 0 {
		c.say(s, x, y, c.pick(c.b.remarks), c.personVals(x), nil)
		if c.r.IntN(2) == 0 {
			return 1
		}
		c.say(s, y, x, c.pick(c.b.acks), nil, nil)
		return 2
	}
	e := pick(c.r, c.b.small)
	c.say(s, x, y, e.q, c.personVals(x), nil)
	c.say(s, y, x, pick(c.r, e.a), c.personVals(y), nil)
	if c.r.IntN(4) == 0 {
		c.say(s, x, y, c.pick(c.b.acks), nil, nil)
		return 3
	}
	return 2
}

// tell writes fact f: maybe the partner's question that leads to it, the
// fact in one message or in two (with or without a probe between), and a
// reaction.
func (c *conv) tell(s int, f *fact) {
	t := f.teller
	last := c.last()
	p := last
	if p < 0 || p == t {
		p = c.other(t)
	}
	if last == t || c.r.IntN(2) == 0 {
		asks := c.b.asks
		switch n := c.r.IntN(3); {
		case n == 0 && f.rel.ask != "":
			asks = []string{f.rel.ask}
		case n == 1 && len(f.k.ask) > 0:
			asks = f.k.ask
		}
		c.say(s, p, t, c.pick(asks), f.vals, nil)
	}
	if len(f.k.more) == 0 || c.r.IntN(2) == 0 && len(f.k.full) > 0 {
		tmpls := f.k.full
		if len(tmpls) == 0 {
			tmpls = f.k.tell
		}
		c.say(s, t, p, c.pick(tmpls), f.vals, f)
	} else {
		c.say(s, t, p, c.pick(f.k.tell), f.vals, f)
		if c.r.IntN(2) == 0 {
			probes := c.b.probes
			if len(f.k.probe) > 0 && c.r.IntN(3) != 0 {
				probes = f.k.probe
			}
			c.say(s, p, t, c.pick(probes), f.vals, nil)
		}
		c.say(s, t, p, c.pick(f.k.more), f.vals, f)
	}
	if c.r.IntN(5) != 0 {
		reacts := c.b.reacts
		if len(f.k.react) > 0 {
			reacts = f.k.react
		}
		c.say(s, p, t, c.pick(reacts), nil, nil)
	}
}

// noise writes a line that uses the words of fact f's kind, with f's own
// key value or another one, and maybe an acknowledgement.
func (c *conv) noise(s int, f *fact) {
	if len(f.k.noise) == 0 {
		c.filler(s)
		return
	}
	x := c.other(c.last())
	if x == f.teller && c.r.IntN(2) == 0 {
		x = c.other(x)
	}
	vals := c.personVals(x)
	if c.r.IntN(4) != 0 {
		setTuple(vals, f.k.slots[0].name, slotValue(f, f.k.slots[0].name))
	} else {
		setTuple(vals, f.k.slots[0].name, pick(c.r, f.k.slots[0].values))
	}
	for _, sl := range f.k.slots[1:] {
		setTuple(vals, sl.name, pick(c.r, sl.values))
	}
	y := c.other(x)
	t := c.pick(f.k.noise)
	c.say(s, x, y, t, vals, nil)
	if strings.HasSuffix(t, "?") || strings.HasSuffix(t, "？") {
		c.say(s, y, x, c.pick(c.b.shrugs), nil, nil)
	} else if c.r.IntN(5) < 3 {
		c.say(s, y, x, c.pick(c.b.acks), nil, nil)
	}
}

// slotValue returns the tuple of f's slot name.
func slotValue(f *fact, name string) string {
	t := f.vals[name]
	for i := 1; ; i++ {
		v, ok := f.vals[name+"."+string(rune('0'+i))]
		if !ok {
			return t
		}
		t += "|" + v
	}
}
