package chunker

import (
	"encoding/hex"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// checkChunks checks the invariants of the chunks cs of ms that hold for
// every input:
//   - chunks are in order and cover every message, without gaps;
//   - a window is the lines of its messages joined by "\n";
//   - the pieces of a split message are numbered from 0, each starts with the
//     message's prefix, and their texts join to the message text;
//   - Tokens is EstimateTokens(Text), within the budget, except for the
//     pieces of a message whose prefix alone takes more than half of it,
//     which hold at most half a budget of text each;
//   - texts are valid UTF-8 and ids are 32 hex digits, all distinct;
//   - times are the min and max of the non-zero message times.
func checkChunks(t testing.TB, cfg Config, ms []Message, cs []Chunk) {
	t.Helper()
	cfg = cfg.WithDefaults()
	if len(ms) == 0 {
		if cs != nil {
			t.Fatalf("Session(no messages)=%v, want nil", cs)
		}
		return
	}
	index := make(map[int64]int, len(ms))
	for i, m := range ms {
		index[m.Seq] = i
	}
	seen := make(map[string]bool, len(cs))
	covered := -1 // last message covered so far
	var rest string
	for k, c := range cs {
		i, ok1 := index[c.SeqStart]
		j, ok2 := index[c.SeqEnd]
		if !ok1 || !ok2 || i > j || i > covered+1 || j < covered {
			t.Fatalf("chunk %d spans seqs %d..%d, want messages after the %d covered so far", k, c.SeqStart, c.SeqEnd, covered+1)
		}
		if !utf8.ValidString(c.Text) {
			t.Fatalf("chunk %d Text=%q, want valid UTF-8", k, c.Text)
		}
		if got := EstimateTokens(c.Text); c.Tokens != got {
			t.Fatalf("chunk %d Tokens=%d, want EstimateTokens(Text)=%d", k, c.Tokens, got)
		}
		if b, err := hex.DecodeString(c.ID); err != nil || len(b) != 16 || seen[c.ID] {
			t.Fatalf("chunk %d ID=%q, want 32 hex digits, unique", k, c.ID)
		}
		seen[c.ID] = true
		start, end := spanTimes(ms[i : j+1])
		if !c.TimeStart.Equal(start) || !c.TimeEnd.Equal(end) {
			t.Fatalf("chunk %d times %v..%v, want %v..%v", k, c.TimeStart, c.TimeEnd, start, end)
		}

		line := Line(ms[i])
		if EstimateTokens(line) <= cfg.BudgetTokens || i != j {
			lines := make([]string, 0, j-i+1)
			for _, m := range ms[i : j+1] {
				lines = append(lines, Line(m))
			}
			if want := strings.Join(lines, "\n"); c.Part != 0 || c.Text != want {
				t.Fatalf("window %d Part %d Text=%q, want 0 and %q", k, c.Part, c.Text, want)
			}
			if c.Tokens > cfg.BudgetTokens {
				t.Fatalf("window %d Tokens=%d, want <= %d", k, c.Tokens, cfg.BudgetTokens)
			}
			covered = j
			continue
		}

		// A piece of the over-long message i.
		prefix := strings.TrimSuffix(line, Line(Message{Text: ms[i].Text}))
		if c.Part == 0 {
			rest = strings.TrimPrefix(line, prefix)
		} else if k == 0 || cs[k-1].Part != c.Part-1 || cs[k-1].SeqStart != c.SeqStart {
			t.Fatalf("piece %d Part=%d, want it to follow part %d", k, c.Part, c.Part-1)
		}
		if !strings.HasPrefix(c.Text, prefix) || !strings.HasPrefix(rest, c.Text[len(prefix):]) {
			t.Fatalf("piece %d Text=%q, want %q and the next of %q", k, c.Text, prefix, rest)
		}
		rest = rest[len(c.Text)-len(prefix):]
		limit := cfg.BudgetTokens
		if pt := EstimateTokens(prefix); pt > limit/2 {
			limit = pt + limit/2 // the documented exception
		}
		if c.Tokens > limit {
			t.Fatalf("piece %d Tokens=%d, want <= %d", k, c.Tokens, limit)
		}
		if rest == "" {
			covered = j
		}
	}
	if covered != len(ms)-1 || rest != "" {
		t.Fatalf("chunks cover messages up to %d with %q left of the last, want all %d", covered, rest, len(ms))
	}
}

func spanTimes(ms []Message) (start, end time.Time) {
	for _, m := range ms {
		if m.Time.IsZero() {
			continue
		}
		if start.IsZero() || m.Time.Before(start) {
			start = m.Time
		}
		if end.IsZero() || m.Time.After(end) {
			end = m.Time
		}
	}
	return start, end
}

// checkSession chunks ms and checks checkChunks, determinism and both prefix
// stability properties:
//
//	(a) every chunk of Session(ms[:n]) but the last, and the pieces of the
//	    last message, starts Session(ms), in the same order;
//	(b) if chunk c of Session(ms) has Part 0 and starts at ms[i], then
//	    SessionAfter(ms[:i], ms[i:]) is the chunks from c on, Context included.
func checkSession(t testing.TB, cfg Config, scope string, ms []Message) {
	t.Helper()
	got := Session(cfg, scope, ms)
	checkChunks(t, cfg, ms, got)
	if again := Session(cfg, scope, ms); !reflect.DeepEqual(again, got) {
		t.Fatalf("Session()=%v, want the same as before %v", again, got)
	}
	for n := 1; n < len(ms); n++ {
		prefix := Session(cfg, scope, ms[:n])
		prefix = prefix[:len(prefix)-1]
		last := ms[n-1].Seq
		for len(prefix) > 0 && prefix[len(prefix)-1].SeqStart == last {
			prefix = prefix[:len(prefix)-1]
		}
		if len(prefix) > len(got) || !reflect.DeepEqual(prefix, got[:len(prefix)]) {
			t.Fatalf("Session(ms[:%d])=%v, want a prefix of Session(ms)=%v", n, spans(prefix), spans(got))
		}
	}
	index := make(map[int64]int, len(ms))
	for i, m := range ms {
		index[m.Seq] = i
	}
	for k, c := range got {
		if c.Part != 0 {
			continue
		}
		i := index[c.SeqStart]
		if suffix := SessionAfter(cfg, scope, ms[:i], ms[i:]); !reflect.DeepEqual(suffix, got[k:]) {
			t.Fatalf("SessionAfter(ms[:%d], ms[%d:])=%v, want %v", i, i, spans(suffix), spans(got[k:]))
		}
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

func TestSessionPrefixStability(t *testing.T) {
	r := rand.New(rand.NewPCG(20261130, 1))
	for range 300 {
		budget := 8 + r.IntN(150)
		cfg := Config{BudgetTokens: budget, OverlapTokens: 1 + r.IntN((budget-1)/2)}
		checkSession(t, cfg, "ns\x00key\x00id", randomSession(r, r.IntN(40)))
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
	f.Add(uint8(10), uint8(3), []byte("\x01hello there\x1e\x02how are you?\x1e\x03fine, thanks. And you?"))
	f.Add(uint8(5), uint8(1), []byte("\x00"+strings.Repeat("日本語のテキスト。", 10)+"\x1e\x41"+strings.Repeat("😀", 30)))
	f.Add(uint8(0), uint8(0), []byte("\x07\xff\xfe invalid \xc3\x1e\x1e\x1e\x13"+strings.Repeat("word ", 40)))
	f.Add(uint8(30), uint8(9), []byte("\x03"+strings.Repeat("a", 300)+"\x1e\x00x\x1e\x00y"))
	f.Fuzz(func(t *testing.T, budget, overlap uint8, data []byte) {
		cfg := Config{BudgetTokens: 3 + int(budget)%120}
		cfg.OverlapTokens = 1 + int(overlap)%((cfg.BudgetTokens-1)/2)
		checkSession(t, cfg, "fuzz", fuzzMessages(data))
	})
}
