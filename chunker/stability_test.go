package chunker

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// checkChunks checks the invariants of the chunks cs of ms that hold for
// every input:
//   - every chunk is of one message (SeqStart == SeqEnd), in the order of
//     ms, and every message has a run of chunks numbered Part 0, 1, ...;
//   - a message whose line fits the budget is exactly one chunk, Part 0,
//     whose Text is its Line;
//   - the pieces of a longer message each start with the message's prefix,
//     and their texts after it join to the message text; there are several
//     unless the prefix alone takes more than half the budget;
//   - Tokens is EstimateTokens(Text), within the budget, except for the
//     pieces of a message whose prefix alone takes more than half of it,
//     which hold at most half a budget of text each;
//   - texts are valid UTF-8 and ids are 32 hex digits, all distinct;
//   - TimeStart and TimeEnd are the message's time;
//   - Context is the message's date, then the nearest of the messages before
//     it within ContextMessages and ContextTokens (see checkContext), the
//     same for every piece of a message.
func checkChunks(t testing.TB, cfg Config, ms []Message, cs []Chunk) {
	t.Helper()
	cfg = cfg.WithDefaults()
	if len(ms) == 0 {
		if cs != nil {
			t.Fatalf("Session(no messages)=%v, want nil", cs)
		}
		return
	}
	seen := make(map[string]bool, len(cs))
	k := 0 // next chunk
	for i, m := range ms {
		var run []Chunk // the chunks of m
		for k < len(cs) && cs[k].SeqStart == m.Seq {
			run = append(run, cs[k])
			k++
		}
		if len(run) == 0 {
			next := "none"
			if k < len(cs) {
				next = fmt.Sprint(span{cs[k].SeqStart, cs[k].SeqEnd, cs[k].Part})
			}
			t.Fatalf("message %d (seq %d) has no chunk; next chunk %s", i, m.Seq, next)
		}
		line := Line(m)
		prefix := strings.TrimSuffix(line, Line(Message{Text: m.Text}))
		limit := cfg.BudgetTokens
		if pt := EstimateTokens(prefix); pt > limit/2 {
			limit = pt + limit/2 // the documented exception
		}
		long := EstimateTokens(line) > cfg.BudgetTokens
		switch {
		case !long && (len(run) != 1 || run[0].Text != line):
			t.Fatalf("message seq %d fits the budget: chunks %v with texts %q, want one of %q", m.Seq, spans(run), texts(run), line)
		case long && len(run) < 2 && limit == cfg.BudgetTokens:
			t.Fatalf("message seq %d of %d tokens over the budget %d is %d chunk, want pieces", m.Seq, EstimateTokens(line), cfg.BudgetTokens, len(run))
		}
		rest := line[len(prefix):]
		for p, c := range run {
			if c.SeqEnd != m.Seq || c.Part != p {
				t.Fatalf("chunk %v of message seq %d, want {%d %d %d}", span{c.SeqStart, c.SeqEnd, c.Part}, m.Seq, m.Seq, m.Seq, p)
			}
			if !utf8.ValidString(c.Text) {
				t.Fatalf("chunk %v Text=%q, want valid UTF-8", span{c.SeqStart, c.SeqEnd, c.Part}, c.Text)
			}
			if got := EstimateTokens(c.Text); c.Tokens != got {
				t.Fatalf("chunk %v Tokens=%d, want EstimateTokens(Text)=%d", span{c.SeqStart, c.SeqEnd, c.Part}, c.Tokens, got)
			}
			if c.Tokens > limit {
				t.Fatalf("chunk %v Tokens=%d, want <= %d", span{c.SeqStart, c.SeqEnd, c.Part}, c.Tokens, limit)
			}
			if b, err := hex.DecodeString(c.ID); err != nil || len(b) != 16 || seen[c.ID] {
				t.Fatalf("chunk %v ID=%q, want 32 hex digits, unique", span{c.SeqStart, c.SeqEnd, c.Part}, c.ID)
			}
			seen[c.ID] = true
			if !c.TimeStart.Equal(m.Time) || !c.TimeEnd.Equal(m.Time) {
				t.Fatalf("chunk %v times %v..%v, want %v", span{c.SeqStart, c.SeqEnd, c.Part}, c.TimeStart, c.TimeEnd, m.Time)
			}
			if c.Context != run[0].Context {
				t.Fatalf("chunk %v Context=%q, want that of part 0 %q", span{c.SeqStart, c.SeqEnd, c.Part}, c.Context, run[0].Context)
			}
			body, ok := strings.CutPrefix(c.Text, prefix)
			if !ok || body == "" && rest != "" || !strings.HasPrefix(rest, body) {
				t.Fatalf("piece %v Text=%q, want %q and the next of %q", span{c.SeqStart, c.SeqEnd, c.Part}, c.Text, prefix, rest)
			}
			rest = rest[len(body):]
		}
		if rest != "" {
			t.Fatalf("pieces of message seq %d leave %q of its text", m.Seq, rest)
		}
		checkContext(t, cfg, ms, i, run[0].Context)
	}
	if k != len(cs) {
		t.Fatalf("chunks from %d on (%v) are of no message in order", k, spans(cs[k:]))
	}
}

// checkContext checks the Context ctx of message ms[i]: the message's date
// when it has a time, then the lines of the messages before it within
// ContextMessages, nearest last, each whole while ContextTokens lasts; the
// farthest kept may be a non-empty start of its line, and only when it did
// not fit whole. Parts are joined by "\n", except that empty parts before
// the first non-empty one leave nothing. Where the cut line is cut is not
// checked here.
func checkContext(t testing.TB, cfg Config, ms []Message, i int, ctx string) {
	t.Helper()
	var date string
	if !ms[i].Time.IsZero() {
		date = ms[i].Time.UTC().Format("2 January 2006")
	}
	var whole []string // kept whole, nearest first
	left, cutLine := cfg.ContextTokens, ""
	for j := i - 1; j >= max(i-max(cfg.ContextMessages, 0), 0) && left > 0; j-- {
		l := Line(ms[j])
		z := EstimateTokens(l)
		if z > left {
			cutLine = l
			break
		}
		left -= z
		whole = append(whole, l)
	}
	slices.Reverse(whole)
	if cutLine == "" {
		if want := joinParts(append([]string{date}, whole...)); ctx != want {
			t.Fatalf("message seq %d Context=%q, want %q", ms[i].Seq, ctx, want)
		}
		return
	}
	// The cut line's start is not empty, so a line break follows it.
	tail := joinParts(append([]string{"x"}, whole...))[1:]
	head, ok := strings.CutSuffix(ctx, tail)
	if !ok {
		t.Fatalf("message seq %d Context=%q, want it to end with the whole lines %q", ms[i].Seq, ctx, tail)
	}
	if date != "" {
		if head, ok = strings.CutPrefix(head, date+"\n"); !ok {
			t.Fatalf("message seq %d Context=%q, want it to start with its date %q", ms[i].Seq, ctx, date)
		}
	}
	if head == "" || !strings.HasPrefix(cutLine, head) || EstimateTokens(head) > left {
		t.Fatalf("message seq %d Context=%q: %q before the whole lines, want a start of %q within %d tokens", ms[i].Seq, ctx, head, cutLine, left)
	}
}

// joinParts joins parts by "\n" but leaves nothing for empty parts before
// the first non-empty one.
func joinParts(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p)
	}
	return b.String()
}

func texts(cs []Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Text
	}
	return out
}

// checkSession chunks ms and checks checkChunks, determinism and prefix
// stability:
//
//	(a) Session(ms[:n]) is the chunks of Session(ms) of its n messages;
//	(b) SessionAfter(ms[:i], ms[i:]) is the chunks of Session(ms) from ms[i]
//	    on, Context included, and so is SessionAfter given only the last
//	    ContextMessages of ms[:i] (checked at one i, to save time).
func checkSession(t testing.TB, cfg Config, scope string, ms []Message) {
	t.Helper()
	got := Session(cfg, scope, ms)
	checkChunks(t, cfg, ms, got)
	if again := Session(cfg, scope, ms); !reflect.DeepEqual(again, got) {
		t.Fatalf("Session()=%v, want the same as before %v", again, got)
	}
	from := make([]int, len(ms)+1) // from[i]: index of the first chunk of ms[i]
	for i, k := 0, 0; i < len(ms); i++ {
		from[i] = k
		for k < len(got) && got[k].SeqStart == ms[i].Seq {
			k++
		}
		from[i+1] = k
	}
	for n := 1; n < len(ms); n++ {
		if prefix := Session(cfg, scope, ms[:n]); !reflect.DeepEqual(prefix, got[:from[n]]) {
			t.Fatalf("Session(ms[:%d])=%v, want the first chunks of Session(ms) %v", n, spans(prefix), spans(got[:from[n]]))
		}
	}
	keep := max(cfg.WithDefaults().ContextMessages, 0)
	for i := range ms {
		want := got[from[i]:]
		if suffix := SessionAfter(cfg, scope, ms[:i], ms[i:]); !reflect.DeepEqual(suffix, want) {
			t.Fatalf("SessionAfter(ms[:%d], ms[%d:])=%v, want %v", i, i, spans(suffix), spans(want))
		}
		if i != len(ms)/2 {
			continue
		}
		if suffix := SessionAfter(cfg, scope, ms[max(i-keep, 0):i], ms[i:]); !reflect.DeepEqual(suffix, want) {
			t.Fatalf("SessionAfter(ms[%d:%d], ms[%d:])=%v, want %v", max(i-keep, 0), i, i, spans(suffix), spans(want))
		}
	}
	if tail := SessionAfter(cfg, scope, ms, nil); tail != nil {
		t.Fatalf("SessionAfter(ms, nil)=%v, want nil", spans(tail))
	}
}

var (
	words = strings.Fields(`the a we I you they it was is to of and in on for with at about
		trip camping weekend yesterday tomorrow painting sunset lake mountains kids dog
		adoption support group counseling career school friends family really think feel
		went saw took made love great amazing hard tried started finished last next year
		month photo picture book music concert beach hike dinner coffee morning evening`)
	cjkPhrases = []string{"今日は", "晴れ", "です", "。", "明日", "山へ", "行きます", "写真", "を撮った", "！", "안녕하세요", "？"}
	emoji      = []string{"😀", "🎉", "👩\u200d💻", "🏕️", "❤️"}
)

// chatText returns n words of chat, with sentence ends.
func chatText(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(9) == 0 {
			b.WriteString([]string{".", "!", "?", ","}[r.IntN(4)])
		}
	}
	b.WriteByte('.')
	return b.String()
}

// randomText returns a text of a random kind and length: chat, a long
// paragraph, CJK without spaces, emoji, or empty.
func randomText(r *rand.Rand) string {
	var b strings.Builder
	switch k := r.IntN(10); {
	case k < 5:
		return chatText(r, 1+r.IntN(30))
	case k < 7:
		return chatText(r, 50+r.IntN(150))
	case k < 8:
		for range 1 + r.IntN(120) {
			b.WriteString(cjkPhrases[r.IntN(len(cjkPhrases))])
		}
	case k < 9:
		for range 1 + r.IntN(80) {
			b.WriteString(emoji[r.IntN(len(emoji))])
		}
	}
	return b.String()
}

// randomSession returns n messages with increasing, gapped seqs and mixed
// speakers, roles and times.
func randomSession(r *rand.Rand, n int) []Message {
	ms := make([]Message, n)
	seq := int64(r.IntN(5))
	for i := range ms {
		seq += 1 + int64(r.IntN(3))
		ms[i] = Message{
			Seq:     seq,
			Speaker: []string{"", "Caroline", "Melanie", "ユーザー"}[r.IntN(4)],
			Role:    []string{"", "user", "assistant"}[r.IntN(3)],
			Text:    randomText(r),
		}
		if r.IntN(5) > 0 {
			ms[i].Time = t0.Add(time.Duration(r.IntN(1000)) * time.Minute)
		}
	}
	return ms
}

// minBudget is the smallest budget the property tests use. At a budget of 1
// a piece of a named message can exceed its prefix and half a budget, the
// bound Session documents: a piece holds at least one rune, and a rune can
// cost a token of its own.
const minBudget = 2

func TestSessionPrefixStability(t *testing.T) {
	r := rand.New(rand.NewPCG(20261130, 1))
	for range 200 {
		cfg := Config{
			BudgetTokens:    []int{minBudget + r.IntN(6), 8 + r.IntN(150)}[min(r.IntN(10), 1)],
			ContextMessages: []int{-1, 0, 1, 2, 3, 5}[r.IntN(6)],
			ContextTokens:   []int{0, 0, 1 + r.IntN(40)}[r.IntN(3)],
		}
		checkSession(t, cfg, "ns\x00key\x00id", randomSession(r, r.IntN(30)))
	}
	for range 5 {
		checkSession(t, Config{}, "default", randomSession(r, 120))
	}
}

// fuzzMessages turns fuzz data into messages: records separated by 0x1e,
// each a control byte (speaker, role, seq gap, time) and the text, which may
// be invalid UTF-8.
func fuzzMessages(data []byte) []Message {
	var ms []Message
	seq := int64(0)
	for rec := range strings.SplitSeq(string(data), "\x1e") {
		if len(ms) == 64 {
			break
		}
		var ctl byte
		if rec != "" {
			ctl, rec = rec[0], rec[1:]
		}
		seq += 1 + int64(ctl>>6)
		m := Message{
			Seq:     seq,
			Speaker: []string{"", "Alice", "ユーザー", "Bartholomew the Magnificent"}[ctl&3],
			Role:    []string{"", "user", "assistant", "tool"}[ctl>>2&3],
			Text:    rec,
		}
		if ctl&0x10 == 0 {
			m.Time = t0.Add(time.Duration(ctl) * time.Minute)
		}
		ms = append(ms, m)
	}
	return ms
}

func FuzzSession(f *testing.F) {
	f.Add(uint8(10), uint8(2), uint8(0), []byte("\x01hello there\x1e\x02how are you?\x1e\x03fine, thanks. And you?"))
	f.Add(uint8(5), uint8(1), uint8(4), []byte("\x00"+strings.Repeat("日本語のテキスト。", 10)+"\x1e\x41"+strings.Repeat("😀", 30)))
	f.Add(uint8(0), uint8(0), uint8(0), []byte("\x07\xff\xfe invalid \xc3\x1e\x1e\x1e\x13"+strings.Repeat("word ", 40)))
	f.Add(uint8(30), uint8(3), uint8(9), []byte("\x03"+strings.Repeat("a", 300)+"\x1e\x00x\x1e\x00y"))
	f.Add(uint8(1), uint8(255), uint8(1), []byte("\x03Bartholomew\x1e\x00\x1e\x02a b. c"))
	f.Fuzz(func(t *testing.T, budget, contextMsgs, contextTokens uint8, data []byte) {
		cfg := Config{
			BudgetTokens:    int(budget) % 120,      // 0 is the default
			ContextMessages: int(contextMsgs)%8 - 1, // -1 is none, 0 the default
			ContextTokens:   int(contextTokens) % 60,
		}
		if cfg.BudgetTokens > 0 {
			cfg.BudgetTokens = max(cfg.BudgetTokens, minBudget)
		}
		checkSession(t, cfg, "fuzz", fuzzMessages(data))
	})
}
