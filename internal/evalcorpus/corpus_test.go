package evalcorpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
)

// generate returns the corpus of c or fails the test.
func generate(t testing.TB, c Config) Corpus {
	t.Helper()
	got, err := Generate(c)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", c, err)
	}
	return got
}

// files writes c into a new directory and returns the two files' bytes.
func files(t testing.TB, c Corpus) (events, queries []byte) {
	t.Helper()
	dir := t.TempDir()
	if err := c.WriteDir(dir); err != nil {
		t.Fatalf("WriteDir: %v", err)
	}
	ev, err := os.ReadFile(filepath.Join(dir, c.Name+".events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	qs, err := os.ReadFile(filepath.Join(dir, c.Name+".queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return ev, qs
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want error
	}{
		{"zero", Config{}, nil},
		{"zh", Config{Lang: "zh", Conversations: 3, Seed: 7}, nil},
		{"unknown language", Config{Lang: "fr"}, ErrLang},
		{"negative", Config{Conversations: -1}, ErrConversations},
		{"too many", Config{Conversations: MaxConversations + 1}, ErrConversations},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if !errors.Is(err, tc.want) {
				t.Fatalf("Validate()=%v, want %v", err, tc.want)
			}
			if _, gerr := Generate(tc.c); !errors.Is(gerr, tc.want) {
				t.Fatalf("Generate()=%v, want %v", gerr, tc.want)
			}
		})
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			c := Config{Lang: lang, Conversations: 3, Seed: 42}
			ev1, qs1 := files(t, generate(t, c))
			ev2, qs2 := files(t, generate(t, c))
			if !bytes.Equal(ev1, ev2) || !bytes.Equal(qs1, qs2) {
				t.Fatal("same Config gave different bytes")
			}
			c.Seed = 43
			ev3, qs3 := files(t, generate(t, c))
			if bytes.Equal(ev1, ev3) || bytes.Equal(qs1, qs3) {
				t.Fatal("seeds 42 and 43 gave the same bytes")
			}
			// A smaller corpus is a prefix of a larger one.
			small := generate(t, Config{Lang: lang, Conversations: 1, Seed: 42})
			first := generate(t, Config{Lang: lang, Conversations: 3, Seed: 42})
			if !reflect.DeepEqual(small.Events, first.Events[:len(small.Events)]) {
				t.Fatal("conversation 1 depends on the number of conversations")
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	a := generate(t, Config{})
	b := generate(t, Config{Lang: "en", Conversations: 10, Seed: 1})
	if a.Name != "synthetic-en" || !reflect.DeepEqual(a, b) {
		t.Fatalf("zero Config gave %q, want the default synthetic-en corpus", a.Name)
	}
	if zh := generate(t, Config{Lang: "zh", Conversations: 1}); zh.Name != "synthetic-zh" {
		t.Fatalf("Name=%q, want synthetic-zh", zh.Name)
	}
}

// TestCorpusIsConsistent checks ids, order, timestamps and gold evidence.
func TestCorpusIsConsistent(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			c := generate(t, Config{Lang: lang})
			checkCorpus(t, c, 10)
		})
	}
}

func checkCorpus(t *testing.T, c Corpus, convs int) {
	t.Helper()
	type conv struct {
		msgs      map[string]Event
		lastSess  string
		lastTime  time.Time
		speakers  map[string]string // speaker -> role
		nMsgs, nQ int
	}
	byKey := map[string]*conv{}
	eventIDs := map[string]bool{}
	var order []string
	prev := Event{}
	for i, e := range c.Events {
		cv := byKey[e.SessionKey]
		if cv == nil {
			cv = &conv{msgs: map[string]Event{}, speakers: map[string]string{}}
			byKey[e.SessionKey] = cv
			order = append(order, e.SessionKey)
		}
		cv.nMsgs++
		if eventIDs[e.EventID] {
			t.Fatalf("event %d: duplicate eventId %q", i, e.EventID)
		}
		eventIDs[e.EventID] = true
		if e.EventID != e.SessionKey+"/"+e.MessageID {
			t.Fatalf("eventId %q, want %q", e.EventID, e.SessionKey+"/"+e.MessageID)
		}
		if want := "D" + strings.TrimPrefix(e.SessionID, "session_") + ":" + itoa(e.Seq); e.MessageID != want {
			t.Fatalf("messageId %q, want %q", e.MessageID, want)
		}
		sameSession := prev.SessionKey == e.SessionKey && prev.SessionID == e.SessionID
		if sameSession && e.Seq != prev.Seq+1 || !sameSession && e.Seq != 1 {
			t.Fatalf("%s: seq %d after %s", e.EventID, e.Seq, prev.EventID)
		}
		if prev.SessionKey == e.SessionKey && e.ConvSeq != prev.ConvSeq+1 || prev.SessionKey != e.SessionKey && e.ConvSeq != 1 {
			t.Fatalf("%s: convSeq %d after %d", e.EventID, e.ConvSeq, prev.ConvSeq)
		}
		ts, err := time.Parse(time.RFC3339, e.Timestamp)
		if err != nil {
			t.Fatalf("%s: timestamp: %v", e.EventID, err)
		}
		if sameSession && e.Timestamp != prev.Timestamp {
			t.Fatalf("%s: timestamp %s differs within its session", e.EventID, e.Timestamp)
		}
		if !sameSession && cv.lastSess != "" && !ts.After(cv.lastTime) {
			t.Fatalf("%s: session starts %s, not after the previous session %s", e.EventID, ts, cv.lastTime)
		}
		if !sameSession {
			if cv.lastSess != "" && sessionNum(e.SessionID) != sessionNum(cv.lastSess)+1 {
				t.Fatalf("%s follows %s", e.SessionID, cv.lastSess)
			}
			cv.lastSess, cv.lastTime = e.SessionID, ts
		}
		if r, ok := cv.speakers[e.Speaker]; ok && r != e.Role {
			t.Fatalf("%s: %s has roles %s and %s", e.EventID, e.Speaker, r, e.Role)
		}
		cv.speakers[e.Speaker] = e.Role
		if strings.TrimSpace(e.Text) == "" || strings.ContainsAny(e.Text, "{}") {
			t.Fatalf("%s: text %q", e.EventID, e.Text)
		}
		cv.msgs[e.MessageID] = e
		prev = e
	}
	if len(order) != convs {
		t.Fatalf("%d conversations, want %d", len(order), convs)
	}
	queryIDs := map[string]bool{}
	for _, q := range c.Queries {
		cv := byKey[q.SessionKey]
		if cv == nil {
			t.Fatalf("%s: unknown sessionKey", q.QueryID)
		}
		cv.nQ++
		if queryIDs[q.QueryID] || !strings.HasPrefix(q.QueryID, q.SessionKey+"/q") {
			t.Fatalf("queryId %q duplicate or not in its sessionKey", q.QueryID)
		}
		queryIDs[q.QueryID] = true
		if CategoryName(q.Category) == "" || q.CategoryName != CategoryName(q.Category) {
			t.Fatalf("%s: category %d %q", q.QueryID, q.Category, q.CategoryName)
		}
		if q.Question == "" || q.Answer == "" || len(q.GoldMessageIDs) == 0 || strings.ContainsAny(q.Question+q.Answer, "{}") {
			t.Fatalf("%s: incomplete %+v", q.QueryID, q)
		}
		var sessions []string
		for _, id := range q.GoldMessageIDs {
			e, ok := cv.msgs[id]
			if !ok {
				t.Fatalf("%s: gold %s not in %s", q.QueryID, id, q.SessionKey)
			}
			if len(sessions) == 0 || sessions[len(sessions)-1] != e.SessionID {
				sessions = append(sessions, e.SessionID)
			}
		}
		if !reflect.DeepEqual(sessions, q.GoldSessionIDs) {
			t.Fatalf("%s: goldSessionIds %v, want %v", q.QueryID, q.GoldSessionIDs, sessions)
		}
		if q.Category == CategoryMultiHop && len(sessions) < 2 {
			t.Fatalf("%s: multi-hop evidence in one session %v", q.QueryID, sessions)
		}
	}
	for _, k := range order {
		cv := byKey[k]
		if cv.nMsgs < 350 || cv.nMsgs > 800 {
			t.Errorf("%s: %d messages, want 350..800", k, cv.nMsgs)
		}
		if cv.nQ < 70 || cv.nQ > 180 {
			t.Errorf("%s: %d questions, want 70..180", k, cv.nQ)
		}
		if n := len(cv.speakers); n < 2 || n > 3 {
			t.Errorf("%s: %d speakers", k, n)
		}
	}
}

func sessionNum(id string) int {
	n := 0
	for _, r := range strings.TrimPrefix(id, "session_") {
		n = n*10 + int(r-'0')
	}
	return n
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestWriteDirRoundTrip(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			c := generate(t, Config{Lang: lang, Conversations: 2, Seed: 5})
			dir := filepath.Join(t.TempDir(), "new", "dir")
			if err := c.WriteDir(dir); err != nil {
				t.Fatalf("WriteDir: %v", err)
			}
			got := Corpus{Name: c.Name,
				Events:  readLines[Event](t, filepath.Join(dir, c.Name+".events.jsonl")),
				Queries: readLines[Query](t, filepath.Join(dir, c.Name+".queries.jsonl")),
			}
			if !reflect.DeepEqual(got, c) {
				t.Fatal("corpus read back differs from the one written")
			}
		})
	}
}

func readLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v T
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestChineseText(t *testing.T) {
	c := generate(t, Config{Lang: "zh"})
	check := func(what, s string) {
		t.Helper()
		if strings.Contains(s, " ") {
			t.Fatalf("%s has an ASCII space: %q", what, s)
		}
	}
	han := 0
	for _, e := range c.Events {
		check(e.EventID, e.Text)
		check(e.EventID+" speaker", e.Speaker)
		for _, r := range e.Text {
			if unicode.Is(unicode.Han, r) {
				han++
				break
			}
		}
	}
	if han < len(c.Events)*95/100 {
		t.Fatalf("%d of %d messages have Han characters, want 95%%", han, len(c.Events))
	}
	for _, q := range c.Queries {
		check(q.QueryID, q.Question)
		check(q.QueryID+" answer", q.Answer)
		if !strings.ContainsFunc(q.Question, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
			t.Fatalf("%s: question %q has no Han characters", q.QueryID, q.Question)
		}
	}
}
