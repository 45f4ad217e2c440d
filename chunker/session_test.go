package chunker

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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
		{"zero gives defaults", Config{}, Config{BudgetTokens: 400, ContextMessages: 2, ContextTokens: 400}, false},
		{"budget only", Config{BudgetTokens: 1000}, Config{BudgetTokens: 1000, ContextMessages: 2, ContextTokens: 1000}, false},
		{"small budget", Config{BudgetTokens: 2}, Config{BudgetTokens: 2, ContextMessages: 2, ContextTokens: 2}, false},
		{"huge budget", Config{BudgetTokens: 1 << 62}, Config{BudgetTokens: 1 << 62, ContextMessages: 2, ContextTokens: 1 << 62}, false},
		{"no context", Config{ContextMessages: -1}, Config{BudgetTokens: 400, ContextMessages: -1, ContextTokens: 400}, false},
		{"one before", Config{ContextMessages: 1}, Config{BudgetTokens: 400, ContextMessages: 1, ContextTokens: 400}, false},
		{"context tokens set", Config{BudgetTokens: 50, ContextTokens: 7}, Config{BudgetTokens: 50, ContextMessages: 2, ContextTokens: 7}, false},
		{"context over the budget", Config{BudgetTokens: 50, ContextTokens: 500}, Config{BudgetTokens: 50, ContextMessages: 2, ContextTokens: 500}, false},
		{"budget of one (no room for a prefix and a rune)", Config{BudgetTokens: 1}, Config{BudgetTokens: 1, ContextMessages: 2, ContextTokens: 1}, true},
		{"negative budget", Config{BudgetTokens: -1}, Config{BudgetTokens: -1, ContextMessages: 2, ContextTokens: -1}, true},
		{"negative budget, context set", Config{BudgetTokens: -1, ContextTokens: 10}, Config{BudgetTokens: -1, ContextMessages: 2, ContextTokens: 10}, true},
		{"negative context", Config{ContextTokens: -1}, Config{BudgetTokens: 400, ContextMessages: 2, ContextTokens: -1}, true},
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
	for _, cfg := range []Config{{BudgetTokens: -1}, {ContextTokens: -5}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("Session(%+v) did not panic", cfg)
				}
			}()
			Session(cfg, "s", msgs("x"))
		}()
	}
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

// Lines "A: " + 8 bytes are 11 bytes, 3 tokens; with 16 bytes 5 tokens,
// with 28 bytes 8 tokens, with 37 bytes 10 tokens and with 38 bytes 11.
const (
	three = "xxxxxxxx"
	five  = "xxxxxxxxxxxxxxxx"
	eight = "xxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	ten   = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
)

func TestSessionMessages(t *testing.T) {
	small := Config{BudgetTokens: 10}
	gapped := msgs(three, five, eight)
	gapped[0].Seq, gapped[1].Seq, gapped[2].Seq = 4, 9, 10
	tests := []struct {
		name string
		cfg  Config
		msgs []Message
		want []span
	}{
		{"empty", small, nil, nil},
		{"one message", small, msgs(three), []span{{1, 1, 0}}},
		{"messages that fit one budget together", small, msgs(three, three, three), []span{{1, 1, 0}, {2, 2, 0}, {3, 3, 0}}},
		{"seqs with gaps", small, gapped, []span{{4, 4, 0}, {9, 9, 0}, {10, 10, 0}}},
		{"a line of exactly the budget", small, msgs(ten), []span{{1, 1, 0}}},
		{"a line one token over the budget", small, msgs(ten + "x"), []span{{1, 1, 0}, {1, 1, 1}}},
		{"over-long message between short ones", small, msgs(three, three, strings.Repeat("y ", 30), three),
			[]span{{1, 1, 0}, {2, 2, 0}, {3, 3, 0}, {3, 3, 1}, {4, 4, 0}}},
		{"over-long first and last", small, msgs(strings.Repeat("y", 40), three, strings.Repeat("z", 40)),
			[]span{{1, 1, 0}, {1, 1, 1}, {2, 2, 0}, {3, 3, 0}, {3, 3, 1}}},
		{"empty texts", small, []Message{{Seq: 1}, {Seq: 2, Role: "user"}}, []span{{1, 1, 0}, {2, 2, 0}}},
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

// TestSessionMessageUnit: the chunks of a session are its messages, each
// covered by exactly the chunks at its seq; a message that fits is one chunk
// whose text is its Line, and a split one gives its line back from its
// pieces.
func TestSessionMessageUnit(t *testing.T) {
	long := strings.Repeat("We walked along the lake until sunset. ", 60) // about 590 tokens
	ms := []Message{
		{Seq: 1, Speaker: "Caroline", Text: "I went to the support group yesterday.", Time: t0},
		{Seq: 2, Speaker: "Melanie", Text: long, Time: t0.Add(time.Minute)},
		{Seq: 3, Role: "assistant", Text: "That sounds lovely."},
		{Seq: 5, Text: ""},
		{Seq: 8, Speaker: "Melanie", Text: "Next week we go camping.", Time: t0.Add(time.Hour)},
	}
	got := Session(Config{}, "s", ms)
	bySeq := make(map[int64][]Chunk)
	for _, c := range got {
		if c.SeqStart != c.SeqEnd {
			t.Fatalf("chunk %v spans two messages", span{c.SeqStart, c.SeqEnd, c.Part})
		}
		bySeq[c.SeqStart] = append(bySeq[c.SeqStart], c)
	}
	if len(bySeq) != len(ms) {
		t.Fatalf("chunks at %d seqs, want the %d messages'", len(bySeq), len(ms))
	}
	for _, m := range ms {
		cs, line := bySeq[m.Seq], Line(m)
		if m.Seq == 2 {
			if len(cs) < 2 {
				t.Fatalf("message 2 of %d tokens is %d chunk, want pieces", EstimateTokens(line), len(cs))
			}
			var joined strings.Builder
			joined.WriteString("Melanie: ")
			for p, c := range cs {
				body, ok := strings.CutPrefix(c.Text, "Melanie: ")
				if !ok || c.Part != p || c.Tokens > 400 {
					t.Fatalf("piece %d Part=%d Tokens=%d Text=%q, want Part %d, at most 400 tokens, the prefix", p, c.Part, c.Tokens, c.Text, p)
				}
				joined.WriteString(body)
			}
			if joined.String() != line {
				t.Fatalf("pieces of message 2 join to %q, want %q", joined.String(), line)
			}
			continue
		}
		if len(cs) != 1 || cs[0].Part != 0 || cs[0].Text != line {
			t.Fatalf("message %d gives chunks %v with texts %q, want one, Part 0, %q", m.Seq, spans(cs), texts(cs), line)
		}
	}
	checkChunks(t, Config{}, ms, got)
}

// TestSessionDefaultBudget: the zero Config splits a line only past 400
// tokens.
func TestSessionDefaultBudget(t *testing.T) {
	if got := (Config{}).WithDefaults().BudgetTokens; got != 400 {
		t.Fatalf("Config{}.WithDefaults().BudgetTokens=%d, want 400", got)
	}
	fits := strings.Repeat("x", 400*4-3) // "A: " and this: 1600 bytes, 400 tokens
	for _, tc := range []struct {
		text  string
		parts int
	}{{fits, 1}, {fits + "x", 2}} {
		got := Session(Config{}, "s", msgs(tc.text))
		if len(got) != tc.parts || got[0].Tokens > 400 {
			t.Fatalf("Session(Config{}) of a %d-token line=%d chunks of %d tokens first, want %d within 400",
				EstimateTokens(Line(msgs(tc.text)[0])), len(got), got[0].Tokens, tc.parts)
		}
	}
}

// refID is the chunk id scheme written out: the hex of the first 16 bytes of
// SHA-256 over idDomain, the scope with its length, seqs and part as 8 bytes
// each, the text, and the context with its length when there is one.
func refID(scope string, seqStart, seqEnd int64, part int, text, context string) string {
	b := []byte(idDomain)
	b = binary.AppendUvarint(b, uint64(len(scope)))
	b = append(b, scope...)
	b = binary.BigEndian.AppendUint64(b, uint64(seqStart))
	b = binary.BigEndian.AppendUint64(b, uint64(seqEnd))
	b = binary.BigEndian.AppendUint64(b, uint64(part))
	b = append(b, text...)
	if context != "" {
		b = binary.AppendUvarint(b, uint64(len(context)))
		b = append(b, context...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

func TestSessionChunkFields(t *testing.T) {
	// The id scheme is part of the stored data: changing it re-embeds every
	// session, so it must only change on purpose (with idDomain). refID gives
	// the id pinned before chunks became messages, of a window of seqs 7..12.
	const scope = "ns\x00key\x00id"
	if got, want := refID(scope, 7, 12, 0, "Mel: Did you go?\nassistant: Yes, on Sunday.\n(photo)", "30 November 2026"),
		"da077ef32f1e037dfdf61fc2cda4cf9e"; got != want {
		t.Fatalf("refID()=%s, want %s", got, want)
	}
	ms := []Message{
		{Seq: 7, Speaker: "Mel", Role: "user", Text: "Did you go?", Time: t0.Add(time.Hour)},
		{Seq: 9, Role: "assistant", Text: "Yes, on Sunday."},
		{Seq: 12, Text: "(photo)", Time: t0},
	}
	got := Session(Config{}, scope, ms)
	want := []Chunk{{
		ID:        "32ca18b17949bf53b3314277f84233ec",
		SeqStart:  7,
		SeqEnd:    7,
		Text:      "Mel: Did you go?",
		Context:   "30 November 2026",
		Tokens:    4,
		TimeStart: t0.Add(time.Hour),
		TimeEnd:   t0.Add(time.Hour),
	}, {
		ID:       "",
		SeqStart: 9,
		SeqEnd:   9,
		Text:     "assistant: Yes, on Sunday.",
		Context:  "Mel: Did you go?",
		Tokens:   7,
	}, {
		ID:        "",
		SeqStart:  12,
		SeqEnd:    12,
		Text:      "(photo)",
		Context:   "30 November 2026\nMel: Did you go?\nassistant: Yes, on Sunday.",
		Tokens:    2,
		TimeStart: t0,
		TimeEnd:   t0,
	}}
	for i := range want {
		w := &want[i]
		if ref := refID(scope, w.SeqStart, w.SeqEnd, w.Part, w.Text, w.Context); w.ID == "" {
			w.ID = ref
		} else if ref != w.ID {
			t.Fatalf("refID(chunk %d)=%s, want the pinned %s", i, ref, w.ID)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Session()=%+v, want %+v", got, want)
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
		{"sentence end just before the middle loses to whitespace", 6, "", "One two. Three four five six seven",
			[]string{"One two. Three four ", "five six seven"}},
		{"line break ends a sentence", 5, "", "one two three\nfour five six",
			[]string{"one two three\n", "four five six"}},
		{"cjk without spaces", 20, "ユ", strings.Repeat("日本語のテキスト", 10), []string{
			"ユ: 日本語のテキスト日本語のテキスト日本", "ユ: 語のテキスト日本語のテキスト日本語の",
			"ユ: テキスト日本語のテキスト日本語のテキ", "ユ: スト日本語のテキスト日本語のテキスト", "ユ: 日本語のテキスト"}},
		{"cjk sentence ends", 10, "", "今日は晴れです。明日は雨でしょう。",
			[]string{"今日は晴れです。", "明日は雨でしょう。"}},
		{"emoji", 30, "", strings.Repeat("😀", 100), []string{
			strings.Repeat("😀", 30), strings.Repeat("😀", 30), strings.Repeat("😀", 30), strings.Repeat("😀", 10)}},
		{"zwj emoji", 5, "", strings.Repeat("👩\u200d💻", 3), // 11 bytes each: may split a grapheme, never a rune
			[]string{"👩\u200d💻👩\u200d", "💻👩\u200d💻"}},
		// Prefix width: "S: " with an 18-byte speaker is 5 tokens, half of 10,
		// and leaves 5 tokens of text a piece; one byte more and the prefix
		// takes over half, so a piece may hold it and half a budget of text.
		{"prefix exactly half the budget", 10, strings.Repeat("s", 18), strings.Repeat("a", 40),
			[]string{strings.Repeat("s", 18) + ": " + strings.Repeat("a", 20), strings.Repeat("s", 18) + ": " + strings.Repeat("a", 20)}},
		{"prefix just under half an odd budget", 11, strings.Repeat("s", 18), strings.Repeat("a", 60), []string{
			strings.Repeat("s", 18) + ": " + strings.Repeat("a", 24), strings.Repeat("s", 18) + ": " + strings.Repeat("a", 24),
			strings.Repeat("s", 18) + ": " + strings.Repeat("a", 12)}},
		{"prefix over half the budget", 10, strings.Repeat("s", 19), strings.Repeat("a", 40),
			[]string{strings.Repeat("s", 19) + ": " + strings.Repeat("a", 23), strings.Repeat("s", 19) + ": " + strings.Repeat("a", 17)}},
		{"speaker longer than half the budget", 5, "Bartholomew", "abcdefgh",
			[]string{"Bartholomew: abcdefgh"}},
		{"speaker longer than the budget", 2, "Bartholomew", "abcdefgh",
			[]string{"Bartholomew: abcdefg", "Bartholomew: h"}},
		{"empty text, speaker over the budget", 3, "Bartholomew", "", []string{"Bartholomew: "}},
		{"wide speaker over half the budget", 4, "ユーザー", "abcdefghijklmnop",
			[]string{"ユーザー: abcdefghij", "ユーザー: klmnop"}},
		{"budget of two tokens", 2, "", "abcdefghijklmnopq", []string{"abcdefgh", "ijklmnop", "q"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{BudgetTokens: tt.budget}
			ms := []Message{{Seq: 3, Speaker: tt.speaker, Text: tt.text}}
			got := Session(cfg, "s", ms)
			for i, c := range got {
				if c.SeqStart != 3 || c.SeqEnd != 3 || c.Part != i {
					t.Fatalf("Session()[%d] at %v, want {3 3 %d}", i, span{c.SeqStart, c.SeqEnd, c.Part}, i)
				}
			}
			if got := texts(got); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Session() texts=%q, want %q", got, tt.want)
			}
			checkChunks(t, cfg, ms, got)
		})
	}
}

func TestSessionInvalidUTF8(t *testing.T) {
	ms := []Message{{Seq: 1, Speaker: "A\xff", Text: "x\xc3"}, {Seq: 2, Text: strings.Repeat("日\xff本", 20)}}
	cfg := Config{BudgetTokens: 10}
	got := Session(cfg, "s", ms)
	for _, c := range got {
		if !utf8.ValidString(c.Text) || !utf8.ValidString(c.Context) {
			t.Fatalf("Session() text %q, context %q, want valid UTF-8", c.Text, c.Context)
		}
	}
	if want := "A\uFFFD: x\uFFFD"; got[0].Text != want {
		t.Fatalf("Session()[0].Text=%q, want %q", got[0].Text, want)
	}
	if len(got) < 3 || got[1].Context != "A\uFFFD: x\uFFFD" {
		t.Fatalf("Session()=%v, want message 2 in pieces with context %q", spans(got), "A\uFFFD: x\uFFFD")
	}
	checkChunks(t, cfg, ms, got)
}

func TestChunkIDs(t *testing.T) {
	// One message of context, so an edit reaches the next chunk and no
	// further; all times on one day.
	cfg := Config{BudgetTokens: 10, ContextMessages: 1}
	base := ids(Session(cfg, "scope", msgs(three, three, three, three, three)))
	if again := ids(Session(cfg, "scope", msgs(three, three, three, three, three))); !reflect.DeepEqual(again, base) {
		t.Fatalf("Session() ids=%v, want %v", again, base)
	}
	all := []int{0, 1, 2, 3, 4}
	tests := []struct {
		name    string
		scope   string
		edit    func([]Message)
		changed []int // chunks whose id changes
	}{
		{"nothing", "scope", func([]Message) {}, nil},
		{"scope", "scope2", func([]Message) {}, all},
		{"scope moves a byte to the seqs", "scop", func([]Message) {}, all},
		{"text", "scope", func(m []Message) { m[2].Text = "xxxxxxxX" }, []int{2, 3}},
		{"speaker", "scope", func(m []Message) { m[2].Speaker = "B" }, []int{2, 3}},
		{"role alone is hidden by the speaker", "scope", func(m []Message) { m[2].Role = "user" }, nil},
		{"seq", "scope", func(m []Message) {
			for i := range m {
				m[i].Seq += 10
			}
		}, all},
		{"later seqs", "scope", func(m []Message) { m[2].Seq, m[3].Seq, m[4].Seq = 13, 14, 15 }, []int{2, 3, 4}},
		{"date", "scope", func(m []Message) { m[2].Time = m[2].Time.Add(48 * time.Hour) }, []int{2}},
		{"time, same day", "scope", func(m []Message) { m[2].Time = m[2].Time.Add(time.Second) }, nil},
		{"no time", "scope", func(m []Message) { m[4].Time = time.Time{} }, []int{4}},
		{"last message", "scope", func(m []Message) { m[4].Text = "yyyyyyyy" }, []int{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := msgs(three, three, three, three, three)
			tt.edit(ms)
			got := ids(Session(cfg, tt.scope, ms))
			var changed []int
			for i := range got {
				if got[i] != base[i] {
					changed = append(changed, i)
				}
			}
			if !reflect.DeepEqual(changed, tt.changed) {
				t.Fatalf("Session() ids changed at %v, want at %v", changed, tt.changed)
			}
		})
	}
	// Pieces of the same text differ by Part.
	pieces := ids(Session(cfg, "s", msgs(strings.Repeat("a", 200))))
	if len(pieces) < 2 || len(dedup(pieces)) != len(pieces) {
		t.Fatalf("Session() piece ids=%v, want several, distinct", pieces)
	}
	// The same message alone at another seq is another chunk.
	a, b := msgs(three), msgs(three)
	b[0].Seq = 2
	if ia, ib := ids(Session(cfg, "s", a)), ids(Session(cfg, "s", b)); ia[0] == ib[0] {
		t.Fatalf("Session() of one message at seq 1 and at seq 2: id %s for both, want different", ia[0])
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
	const (
		l1 = "Caroline: I went to the LGBTQ support group yesterday."
		l2 = "Melanie: How was it? Tell me everything about the group."
		l3 = "Caroline: Powerful. The stories inspired me to keep going."
	)
	tests := []struct {
		name string
		cfg  Config
		want []string // Context of each chunk
	}{
		{"two before by default", Config{}, []string{
			"8 May 2023",
			"8 May 2023\n" + l1,
			"8 May 2023\n" + l1 + "\n" + l2,
			l2 + "\n" + l3,
		}},
		{"one before", Config{ContextMessages: 1}, []string{
			"8 May 2023",
			"8 May 2023\n" + l1,
			"8 May 2023\n" + l2,
			l3,
		}},
		{"three before", Config{ContextMessages: 3}, []string{
			"8 May 2023",
			"8 May 2023\n" + l1,
			"8 May 2023\n" + l1 + "\n" + l2,
			l1 + "\n" + l2 + "\n" + l3,
		}},
		{"dates only", Config{ContextMessages: -1}, []string{
			"8 May 2023", "8 May 2023", "8 May 2023", "",
		}},
		// The lines are 14, 14 and 15 tokens.
		{"context tokens fit two lines exactly", Config{ContextMessages: 3, ContextTokens: 14 + 15}, []string{
			"8 May 2023",
			"8 May 2023\n" + l1,
			"8 May 2023\n" + l1 + "\n" + l2,
			l2 + "\n" + l3,
		}},
		{"one token more cuts the farthest line", Config{ContextMessages: 3, ContextTokens: 14 + 15 + 1}, []string{
			"8 May 2023",
			"8 May 2023\n" + l1,
			"8 May 2023\n" + l1 + "\n" + l2,
			"Caro\n" + l2 + "\n" + l3,
		}},
		{"a line over the context tokens", Config{ContextTokens: 3}, []string{
			"8 May 2023",
			"8 May 2023\nCaroline: I ",
			"8 May 2023\nMelanie: ",
			"Caroline: ",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Session(tt.cfg, "s", ms)
			if len(got) != len(ms) {
				t.Fatalf("Session()=%v, want one chunk a message", spans(got))
			}
			if ctxs := contexts(got); !reflect.DeepEqual(ctxs, tt.want) {
				t.Fatalf("contexts=%q, want %q", ctxs, tt.want)
			}
			checkChunks(t, tt.cfg, ms, got)
		})
	}
	t.Run("context is cut to the budget, nearest kept", func(t *testing.T) {
		long := []Message{
			{Seq: 1, Speaker: "A", Text: strings.Repeat("far ", 80)},    // 81 tokens
			{Seq: 2, Speaker: "B", Text: strings.Repeat("near ", 14)},   // 19 tokens
			{Seq: 3, Speaker: "C", Text: strings.Repeat("answer ", 11)}, // 20 tokens
		}
		cfg := Config{BudgetTokens: 30}
		got := Session(cfg, "s", long)
		last := got[len(got)-1]
		// 11 tokens are left for A's line: 44 bytes, cut after a space.
		want := "A: " + strings.Repeat("far ", 10) + "\nB: " + strings.Repeat("near ", 14)
		if last.SeqStart != 3 || last.Context != want {
			t.Fatalf("context of the last chunk (of %d) %q, want %q", last.SeqStart, last.Context, want)
		}
		checkChunks(t, cfg, long, got)
	})
	t.Run("every piece has the context of its message", func(t *testing.T) {
		split := msgs("hello", strings.Repeat("word ", 20), "bye")
		cfg := Config{BudgetTokens: 10, ContextTokens: 5}
		got := Session(cfg, "s", split)
		// The 26-token line is three pieces of 7 words; of it, 5 tokens fit
		// the context of the message after it, and nothing more.
		want := []string{
			"30 November 2026",
			"30 November 2026\nA: hello", "30 November 2026\nA: hello", "30 November 2026\nA: hello",
			"30 November 2026\nA: word word word ",
		}
		if ctxs := contexts(got); !reflect.DeepEqual(ctxs, want) {
			t.Fatalf("contexts=%q, want %q", ctxs, want)
		}
		checkChunks(t, cfg, split, got)
	})
	t.Run("a changed context changes the id", func(t *testing.T) {
		a := Session(Config{}, "s", ms)
		edited := append([]Message(nil), ms...)
		edited[1].Text = "How was it? Tell me everything about the event."
		b := Session(Config{}, "s", edited)
		if a[3].Text != b[3].Text || a[3].ID == b[3].ID {
			t.Fatalf("chunk 4 with the same text and another context: ids %s and %s, want different", a[3].ID, b[3].ID)
		}
		if a[0].ID != b[0].ID {
			t.Fatalf("chunk 1 is unchanged but its id changed")
		}
	})
}

func contexts(cs []Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Context
	}
	return out
}

func TestSessionAfter(t *testing.T) {
	ms := msgs("one", strings.Repeat("long text ", 10), "three", "four")
	ms[2].Time = time.Time{}
	cfg := Config{BudgetTokens: 8}
	all := Session(cfg, "s", ms)
	for i := range ms {
		var want []Chunk
		for _, c := range all {
			if c.SeqStart >= ms[i].Seq {
				want = append(want, c)
			}
		}
		for _, before := range [][]Message{ms[:i], ms[max(i-2, 0):i]} {
			if got := SessionAfter(cfg, "s", before, ms[i:]); !reflect.DeepEqual(got, want) {
				t.Fatalf("SessionAfter(%d before, ms[%d:])=%v, want %v", len(before), i, spans(got), spans(want))
			}
		}
	}
	if got := SessionAfter(cfg, "s", nil, ms); !reflect.DeepEqual(got, all) {
		t.Fatalf("SessionAfter(nil, ms)=%v, want Session(ms)=%v", spans(got), spans(all))
	}
	if got := SessionAfter(cfg, "s", ms, nil); got != nil {
		t.Fatalf("SessionAfter(ms, nil)=%v, want nil", spans(got))
	}
	// Without context the messages before change nothing.
	none := Config{BudgetTokens: 8, ContextMessages: -1}
	if got, want := SessionAfter(none, "s", ms[:3], ms[3:]), Session(none, "s", ms[3:]); !reflect.DeepEqual(got, want) {
		t.Fatalf("SessionAfter(no context)=%+v, want %+v", got, want)
	}
}
