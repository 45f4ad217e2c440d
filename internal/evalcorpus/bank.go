package evalcorpus

import (
	"strings"
	"time"
)

// A bank is one language's templates: the small talk around the facts, the
// fact kinds and the words for people and dates.
//
// Templates are strings with {key} placeholders. Slot values are tuples
// written "f0|f1|...": {x} is field 0 of slot x, {x.1} field 1 and so on.
// Every template may use {to} (the addressee's call name); fact templates
// also {p} (the teller's name), {his}, {he}, {kid}, {kid.1}, {with},
// {with.1}, and, in event kinds, {rel} or {Rel} (when it happened).
type bank struct {
	name     string   // corpus name
	people   []string // "name|call|gender" (gender "m" or "f")
	kids     []string // "name|son or daughter|gender"
	withKids []string // companions of a person with children, "as told|as asked"
	withAny  []string // companions of anyone
	his      [2]string
	he       [2]string

	greet      []string // opens a session, usually with {to}
	greetBack  []string // answers the greeting
	bye        []string // ends a session
	byeBack    []string // answers the goodbye
	small      []exchange
	remarks    []string // a volunteered line of small talk
	reacts     []string // a reaction to news
	acks       []string // a short answer to small talk
	asks       []string // asks what the other has been up to
	probes     []string // asks for more about news
	shrugs     []string // answers a question in passing
	rels       []rel
	kinds      []kind
	join       func([]string) string // "a and b"
	dayAnswer  func(time.Time) string
	weekendOf  func(time.Time) string // the weekend before a session date
	weekBefore func(time.Time) string // the week before a session date
}

// An exchange is a small-talk question and its possible answers.
type exchange struct {
	q string
	a []string
}

// A rel is a relative time expression and how its date is found from the
// session's date.
type rel struct {
	text string
	ask  string // a question the fact may answer ("How was your weekend?")
	form relForm
	days int // days back for relDay; the weekday for relWeekday
}

type relForm int

const (
	relDay relForm = iota
	relWeekday
	relWeekend
	relWeek
)

// answer returns the temporal answer of r said on session date d.
func (b *bank) answer(r rel, d time.Time) string {
	switch r.form {
	case relWeekday:
		back := (int(d.Weekday()) - r.days + 7) % 7
		if back == 0 {
			back = 7
		}
		return b.dayAnswer(d.AddDate(0, 0, -back))
	case relWeekend:
		return b.weekendOf(d)
	case relWeek:
		return b.weekBefore(d)
	}
	return b.dayAnswer(d.AddDate(0, 0, -r.days))
}

// A kind is one kind of fact, such as adopting a pet.
type kind struct {
	name  string
	event bool   // the fact happened at a time: tell and full carry {rel}
	needs string // "kids" when the teller must have children
	slots []slot // slots[0] is the key: its values are not reused in a conversation
	ask   []string
	tell  []string // states the fact without the extra slots
	full  []string // states the fact with the extra slots
	more  []string // states the extra slots, right after tell
	probe []string // asks for the extra slots
	noise []string // other talk with the topic's words; never a fact
	react []string // reactions to this kind of news, instead of bank.reacts
	qs    []question
	multi *question // asked over two facts of this kind told by one person
}

// A slot is a named list of value tuples.
type slot struct {
	name   string
	values []string
}

// A question is a question template about a fact. about lists the keys
// whose messages are the evidence; "rel" makes it temporal.
type question struct {
	cat    int
	about  []string
	texts  []string
	answer string
}

// mentions reports whether template t uses key: "x" matches {x}, "x.*"
// any field of x ({x}, {x.1}, ...); "rel" also matches {Rel}.
func mentions(t, key string) bool {
	if key == "rel" && strings.Contains(t, "{Rel}") {
		return true
	}
	if x, ok := strings.CutSuffix(key, ".*"); ok {
		return strings.Contains(t, "{"+x+"}") || strings.Contains(t, "{"+x+".")
	}
	return strings.Contains(t, "{"+key+"}")
}

// render fills the placeholders of t from vals; values may hold
// placeholders themselves. It reports the first key without a value.
func render(t string, vals map[string]string) (string, string) {
	for range 3 {
		if !strings.Contains(t, "{") {
			return t, ""
		}
		var sb strings.Builder
		for {
			i := strings.IndexByte(t, '{')
			if i < 0 {
				sb.WriteString(t)
				break
			}
			j := strings.IndexByte(t[i:], '}')
			if j < 0 {
				return "", t[i:]
			}
			key := t[i+1 : i+j]
			v, ok := vals[key]
			if !ok {
				return "", key
			}
			sb.WriteString(t[:i])
			sb.WriteString(v)
			t = t[i+j+1:]
		}
		t = sb.String()
	}
	return t, ""
}

// setTuple stores the fields of tuple v under name, name.1, name.2 and so on.
func setTuple(vals map[string]string, name, v string) {
	for i, f := range strings.Split(v, "|") {
		if i == 0 {
			vals[name] = f
		} else {
			vals[name+"."+string(rune('0'+i))] = f
		}
	}
}

// upperFirst capitalises the first letter of an English string.
func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func field(tuple string, i int) string {
	f := strings.Split(tuple, "|")
	if i < len(f) {
		return f[i]
	}
	return ""
}
