package chunker

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// msgs builds a session of speaker A from texts, with Seq 1, 2, ... and a
// time a minute apart.
func msgs(texts ...string) []Message {
	out := make([]Message, len(texts))
	for i, s := range texts {
		out[i] = Message{Seq: int64(i + 1), Speaker: "A", Text: s, Time: t0.Add(time.Duration(i) * time.Minute)}
	}
	return out
}

// span is the position of a chunk in its session.
type span struct {
	SeqStart, SeqEnd int64
	Part             int
}

func spans(cs []Chunk) []span {
	out := make([]span, len(cs))
	for i, c := range cs {
		out[i] = span{c.SeqStart, c.SeqEnd, c.Part}
	}
	return out
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		want    Config
		wantErr bool
	}{
		{"zero gives defaults", Config{}, Config{400, 60, 2, 400}, false},
		{"budget only", Config{BudgetTokens: 1000}, Config{1000, 60, 2, 1000}, false},
		{"both set", Config{BudgetTokens: 10, OverlapTokens: 4}, Config{10, 4, 2, 10}, false},
		{"smallest", Config{BudgetTokens: 3, OverlapTokens: 1}, Config{3, 1, 2, 3}, false},
		{"overlap half the budget", Config{BudgetTokens: 10, OverlapTokens: 5}, Config{10, 5, 2, 10}, true},
		{"default overlap over small budget", Config{BudgetTokens: 100}, Config{100, 60, 2, 100}, true},
		{"negative budget", Config{BudgetTokens: -1, OverlapTokens: 1}, Config{-1, 1, 2, -1}, true},
		{"negative overlap", Config{OverlapTokens: -1}, Config{400, -1, 2, 400}, true},
		{"odd budget", Config{BudgetTokens: 11, OverlapTokens: 5}, Config{11, 5, 2, 11}, false},
		{"huge overlap", Config{BudgetTokens: 10, OverlapTokens: 1 << 62}, Config{10, 1 << 62, 2, 10}, true},
		{"no context", Config{ContextMessages: -1}, Config{400, 60, -1, 400}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.WithDefaults(); got != tt.want {
				t.Fatalf("WithDefaults()=%+v, want %+v", got, tt.want)
			}
			err := tt.cfg.Validate()
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
				t.Fatalf("Validate()=%v, want error %v wrapping ErrInvalidConfig", err, tt.wantErr)
			}
		})
	}
}

func TestSessionInvalidConfigPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatalf("Session() with overlap 5 of budget 10 did not panic")
		}
	}()
	Session(Config{BudgetTokens: 10, OverlapTokens: 5}, "s", msgs("x"))
}

func TestLine(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		want string
	}{
		{"speaker", Message{Speaker: "Caroline", Role: "user", Text: "hi"}, "Caroline: hi"},
		{"role", Message{Role: "assistant", Text: "hello"}, "assistant: hello"},
		{"bare", Message{Text: "just text"}, "just text"},
		{"empty text", Message{Speaker: "Bob"}, "Bob: "},
		{"invalid utf-8", Message{Speaker: "B\xffb", Text: "a\xfe\xfdz"}, "B\uFFFDb: a\uFFFDz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.m); got != tt.want {
				t.Fatalf("Line()=%q, want %q", got, tt.want)
			}
		})
	}
}

// Lines "A: " + 8 bytes are 11 bytes; k of them joined are 12k-1 bytes, 3k
// tokens. Lines "A: " + 16 bytes cost 5 tokens, with 28 bytes 8 tokens.
const (
	three = "xxxxxxxx"
	five  = "xxxxxxxxxxxxxxxx"
	eight = "xxxxxxxxxxxxxxxxxxxxxxxxxxxx"
)

func TestSessionWindows(t *testing.T) {
	small := Config{BudgetTokens: 10, OverlapTokens: 4}
	tests := []struct {
		name string
		cfg  Config
		msgs []Message
		want []span
	}{
		{"empty", small, nil, nil},
		{"one message", small, msgs(three), []span{{1, 1, 0}}},
		{"one window", small, msgs(three, three, three), []span{{1, 3, 0}}},
		{"overlap of one message", small, msgs(three, three, three, three, three, three, three),
			[]span{{1, 3, 0}, {3, 5, 0}, {5, 7, 0}}},
		{"last window reaches the end", small, msgs(three, three, three, three),
			[]span{{1, 3, 0}, {3, 4, 0}}},
		{"last message over the overlap", small, msgs(five, five, five, five),
			[]span{{1, 2, 0}, {3, 4, 0}}},
		{"overlap would not leave room for the next message", small, msgs(three, three, three, eight),
			[]span{{1, 3, 0}, {4, 4, 0}}},
		{"overlap of two messages", Config{BudgetTokens: 15, OverlapTokens: 6}, msgs(three, three, three, three, three, three, three),
			[]span{{1, 5, 0}, {4, 7, 0}}},
		{"over-long message between windows", small, msgs(three, three, strings.Repeat("y ", 30), three),
			[]span{{1, 2, 0}, {3, 3, 0}, {3, 3, 1}, {4, 4, 0}}},
		{"over-long first and last", small, msgs(strings.Repeat("y", 40), three, strings.Repeat("z", 40)),
			[]span{{1, 1, 0}, {1, 1, 1}, {2, 2, 0}, {3, 3, 0}, {3, 3, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Session(tt.cfg, "scope", tt.msgs)
			if gotSpans := spans(got); !reflect.DeepEqual(gotSpans, tt.want) && !(len(gotSpans) == 0 && len(tt.want) == 0) {
				t.Fatalf("Session()=%v, want %v", gotSpans, tt.want)
			}
			if tt.msgs == nil && got != nil {
				t.Fatalf("Session(nil)=%v, want nil", got)
			}
			checkChunks(t, tt.cfg, tt.msgs, got)
		})
	}
}

func TestSessionChunkFields(t *testing.T) {
	ms := []Message{
		{Seq: 7, Speaker: "Mel", Role: "user", Text: "Did you go?", Time: t0.Add(time.Hour)},
		{Seq: 9, Role: "assistant", Text: "Yes, on Sunday."},
		{Seq: 12, Text: "(photo)", Time: t0},
	}
	got := Session(Config{}, "ns\x00key\x00id", ms)
	want := []Chunk{{
		ID:        got[0].ID,
		SeqStart:  7,
		SeqEnd:    12,
		Text:      "Mel: Did you go?\nassistant: Yes, on Sunday.\n(photo)",
		Context:   "30 November 2026",
		Tokens:    13,
		TimeStart: t0,
		TimeEnd:   t0.Add(time.Hour),
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Session()=%+v, want %+v", got, want)
	}
	// The id scheme is part of the stored data: changing it re-embeds every
	// session, so it must only change on purpose (with idDomain).
	if wantID := "da077ef32f1e037dfdf61fc2cda4cf9e"; got[0].ID != wantID {
		t.Fatalf("Session()[0].ID=%s, want %s", got[0].ID, wantID)
	}
}

func TestSessionSplit(t *testing.T) {
	tests := []struct {
		name    string
		budget  int
		speaker string
		text    string
		want    []string // piece texts
	}{
		{"latin without spaces", 10, "", strings.Repeat("a", 100),
			[]string{strings.Repeat("a", 40), strings.Repeat("a", 40), strings.Repeat("a", 20)}},
		{"prefix on every piece", 10, "Al", strings.Repeat("a", 60),
			[]string{"Al: " + strings.Repeat("a", 36), "Al: " + strings.Repeat("a", 24)}},
		{"whitespace", 5, "", "aaaa bbbb cccc dddd eeee ffff gggg",
			[]string{"aaaa bbbb cccc dddd ", "eeee ffff gggg"}},
		{"sentence end in the second half", 7, "", "One two. Three four five. Six seven.",
			[]string{"One two. Three four five. ", "Six seven."}},
		{"sentence end in the first half loses to whitespace", 6, "", "Hi. Three four five six seven eight",
			[]string{"Hi. Three four five six ", "seven eight"}},
		{"cjk without spaces", 20, "ユ", strings.Repeat("日本語のテキスト", 10), []string{
			"ユ: 日本語のテキスト日本語のテキスト日本", "ユ: 語のテキスト日本語のテキスト日本語の",
			"ユ: テキスト日本語のテキスト日本語のテキ", "ユ: スト日本語のテキスト日本語のテキスト", "ユ: 日本語のテキスト"}},
		{"cjk sentence ends", 10, "", "今日は晴れです。明日は雨でしょう。",
			[]string{"今日は晴れです。", "明日は雨でしょう。"}},
		{"emoji", 30, "", strings.Repeat("😀", 100), []string{
			strings.Repeat("😀", 30), strings.Repeat("😀", 30), strings.Repeat("😀", 30), strings.Repeat("😀", 10)}},
		{"zwj emoji", 5, "", strings.Repeat("👩\u200d💻", 3), // 11 bytes each: may split a grapheme, never a rune
			[]string{"👩\u200d💻👩\u200d", "💻👩\u200d💻"}},
		{"speaker longer than half the budget", 5, "Bartholomew", "abcdefgh",
			[]string{"Bartholomew: abcdefgh"}},
		{"empty text, speaker over the budget", 3, "Bartholomew", "", []string{"Bartholomew: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{BudgetTokens: tt.budget, OverlapTokens: 1}
			ms := []Message{{Seq: 3, Speaker: tt.speaker, Text: tt.text}}
			got := Session(cfg, "s", ms)
			var texts []string
			for i, c := range got {
				texts = append(texts, c.Text)
				if c.SeqStart != 3 || c.SeqEnd != 3 || c.Part != i {
					t.Fatalf("Session()[%d] at %v, want {3 3 %d}", i, span{c.SeqStart, c.SeqEnd, c.Part}, i)
				}
			}
			if !reflect.DeepEqual(texts, tt.want) {
				t.Fatalf("Session() texts=%q, want %q", texts, tt.want)
			}
			checkChunks(t, cfg, ms, got)
		})
	}
}

func TestSessionInvalidUTF8(t *testing.T) {
	ms := []Message{{Seq: 1, Speaker: "A\xff", Text: "x\xc3"}, {Seq: 2, Text: strings.Repeat("日\xff本", 20)}}
	got := Session(Config{BudgetTokens: 10, OverlapTokens: 2}, "s", ms)
	for _, c := range got {
		if !utf8.ValidString(c.Text) {
			t.Fatalf("Session() text %q is not valid UTF-8", c.Text)
		}
	}
	if want := "A\uFFFD: x\uFFFD"; got[0].Text != want {
		t.Fatalf("Session()[0].Text=%q, want %q", got[0].Text, want)
	}
}

func TestChunkIDs(t *testing.T) {
	cfg := Config{BudgetTokens: 10, OverlapTokens: 4}
	base := msgs(three, three, three, three, three)
	baseIDs := ids(Session(cfg, "scope", base))
	if again := ids(Session(cfg, "scope", msgs(three, three, three, three, three))); !reflect.DeepEqual(again, baseIDs) {
		t.Fatalf("Session() ids=%v, want %v", again, baseIDs)
	}
	tests := []struct {
		name  string
		scope string
		edit  func([]Message)
	}{
		{"scope", "scope2", func([]Message) {}},
		{"scope moves a byte to the seqs", "scop", func([]Message) {}},
		{"text", "scope", func(m []Message) { m[0].Text = "xxxxxxxX"; m[3].Text = "xxxxxxxX" }},
		{"speaker", "scope", func(m []Message) { m[0].Speaker = "B"; m[3].Speaker = "B" }},
		{"seq", "scope", func(m []Message) {
			for i := range m {
				m[i].Seq += 10
			}
		}},
		{"seq end", "scope", func(m []Message) { m[2].Seq, m[3].Seq, m[4].Seq = 13, 14, 15 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := msgs(three, three, three, three, three)
			tt.edit(ms)
			got := ids(Session(cfg, tt.scope, ms))
			for i := range got {
				if got[i] == baseIDs[i] {
					t.Fatalf("Session() id %d=%s, want a change from %s", i, got[i], baseIDs[i])
				}
			}
		})
	}
	// Pieces of the same text differ by Part.
	pieces := ids(Session(cfg, "s", msgs(strings.Repeat("a", 200))))
	if len(pieces) < 2 || len(dedup(pieces)) != len(pieces) {
		t.Fatalf("Session() piece ids=%v, want several, distinct", pieces)
	}
}

func ids(cs []Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func dedup(s []string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, v := range s {
		m[v] = true
	}
	return m
}

func TestSessionContext(t *testing.T) {
	day := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	ms := []Message{
		{Seq: 1, Speaker: "Caroline", Text: "I went to the LGBTQ support group yesterday.", Time: day},
		{Seq: 2, Speaker: "Melanie", Text: "How was it? Tell me everything about the group.", Time: day},
		{Seq: 3, Speaker: "Caroline", Text: "Powerful. The stories inspired me to keep going.", Time: day},
		{Seq: 4, Speaker: "Melanie", Text: "Glad to hear that you found people who care!"},
	}
	one := Config{BudgetTokens: 20, OverlapTokens: 1, ContextTokens: 100} // one message a window
	tests := []struct {
		name string
		cfg  Config
		want []string // Context of each chunk
	}{
		{"two before by default", one, []string{
			"8 May 2023",
			"8 May 2023\nCaroline: I went to the LGBTQ support group yesterday.",
			"8 May 2023\nCaroline: I went to the LGBTQ support group yesterday.\nMelanie: How was it? Tell me everything about the group.",
			"Melanie: How was it? Tell me everything about the group.\nCaroline: Powerful. The stories inspired me to keep going.",
		}},
		{"one before", Config{BudgetTokens: 20, OverlapTokens: 1, ContextMessages: 1, ContextTokens: 100}, []string{
			"8 May 2023",
			"8 May 2023\nCaroline: I went to the LGBTQ support group yesterday.",
			"8 May 2023\nMelanie: How was it? Tell me everything about the group.",
			"Caroline: Powerful. The stories inspired me to keep going.",
		}},
		{"dates only", Config{BudgetTokens: 20, OverlapTokens: 1, ContextMessages: -1, ContextTokens: 100}, []string{
			"8 May 2023", "8 May 2023", "8 May 2023", "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Session(tt.cfg, "s", ms)
			var ctxs []string
			for _, c := range got {
				if c.SeqStart != c.SeqEnd {
					t.Fatalf("chunk %d-%d spans messages; the test wants one a window", c.SeqStart, c.SeqEnd)
				}
				ctxs = append(ctxs, c.Context)
			}
			if !reflect.DeepEqual(ctxs, tt.want) {
				t.Fatalf("contexts=%q, want %q", ctxs, tt.want)
			}
		})
	}
	t.Run("context is cut to the budget, nearest kept", func(t *testing.T) {
		long := []Message{
			{Seq: 1, Speaker: "A", Text: strings.Repeat("far ", 80)},
			{Seq: 2, Speaker: "B", Text: strings.Repeat("near ", 14)},
			{Seq: 3, Speaker: "C", Text: strings.Repeat("answer ", 11)},
		}
		got := Session(Config{BudgetTokens: 30, OverlapTokens: 1}, "s", long)
		last := got[len(got)-1]
		if last.SeqStart != 3 || !strings.HasSuffix(last.Context, "\nB: "+strings.Repeat("near ", 14)) || !strings.HasPrefix(last.Context, "A: far far") {
			t.Fatalf("context of the last chunk (from %d) %q, want the start of A's line then B's whole line", last.SeqStart, last.Context)
		}
		if n := EstimateTokens(last.Context); n > 30+1 {
			t.Fatalf("context %q has %d tokens, want about the budget 30", last.Context, n)
		}
	})
	t.Run("a changed context changes the id", func(t *testing.T) {
		a := Session(one, "s", ms)
		edited := append([]Message(nil), ms...)
		edited[1].Text = "How was it? Tell me everything about the event."
		b := Session(one, "s", edited)
		if a[3].Text != b[3].Text || a[3].ID == b[3].ID {
			t.Fatalf("chunk 4 with the same text and another context: ids %s and %s, want different", a[3].ID, b[3].ID)
		}
		if a[0].ID != b[0].ID {
			t.Fatalf("chunk 1 is unchanged but its id changed")
		}
	})
}
