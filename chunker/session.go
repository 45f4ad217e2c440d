package chunker

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors of the chunker package.
var (
	// ErrInvalidConfig is wrapped by Config.Validate when a setting is out of
	// range.
	ErrInvalidConfig = errors.New("invalid chunker config")
)

const (
	defaultBudgetTokens = 400
	defaultContextMsgs  = 2
	// idDomain starts the hashed input of every chunk id; a change to the id
	// scheme changes it.
	idDomain = "memindex/chunk/v2\x00"
)

// Message is one turn given to the chunker.
type Message struct {
	Seq     int64
	ID      string
	Role    string
	Speaker string
	Text    string
	Time    time.Time
}

// Config sets the size of chunks. The zero Config gives the defaults.
type Config struct {
	// BudgetTokens is the most tokens of one chunk: a message whose line
	// is longer is split into pieces (default 400 when 0).
	BudgetTokens int
	// ContextMessages is how many messages before a chunk go into its
	// Context: default 2 when 0, none when negative.
	ContextMessages int
	// ContextTokens bounds the messages' part of a Context; default
	// BudgetTokens when 0.
	ContextTokens int
}

// WithDefaults returns c with each zero setting replaced by its default.
func (c Config) WithDefaults() Config {
	if c.BudgetTokens == 0 {
		c.BudgetTokens = defaultBudgetTokens
	}
	if c.ContextMessages == 0 {
		c.ContextMessages = defaultContextMsgs
	}
	if c.ContextTokens == 0 {
		c.ContextTokens = c.BudgetTokens
	}
	return c
}

// Validate checks the settings c has once defaults are applied, so the zero
// Config is valid. The error wraps ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.BudgetTokens < 2:
		// A piece holds its "Speaker: " prefix and at least one rune more.
		return fmt.Errorf("budget of %d tokens is under 2: %w", c.BudgetTokens, ErrInvalidConfig)
	case c.ContextTokens < 0:
		return fmt.Errorf("context of %d tokens is negative: %w", c.ContextTokens, ErrInvalidConfig)
	}
	return nil
}

// Chunk is one retrieval unit of a session: one message, or one piece of a
// message too long for the budget.
type Chunk struct {
	ID       string // stable id: hex of 16 bytes of SHA-256 over scope, SeqStart, SeqEnd, Part, Text and Context
	SeqStart int64  // the message's seq (SeqEnd is the same)
	SeqEnd   int64
	Part     int // 0 for a whole message; 0..n-1 for the pieces of a split over-long message
	// Context is what the chunk's text answers or follows: its date
	// (TimeStart as "2 January 2006", UTC) on its own line when known, then
	// the lines of up to ContextMessages messages before it, within
	// ContextTokens (the nearest kept whole first). It is indexed for keyword search with a lower
	// weight than Text, never shown as the hit. Empty for the first chunk of
	// a session without times.
	Context   string
	Text      string
	Tokens    int // EstimateTokens(Text)
	TimeStart time.Time
	TimeEnd   time.Time
}

// EmbedText is the text a chunk's vector is computed from: its context, when
// it has one, then a blank line and its text, so that a reply is embedded
// with what it answers.
func EmbedText(context, text string) string {
	if context == "" {
		return text
	}
	return context + "\n\n" + text
}

// Line renders one message as it appears in a chunk: "Speaker: text", or
// "role: text" when there is no speaker, or the bare text when there is
// neither. Invalid UTF-8 is replaced by U+FFFD, as in chunks.
func Line(m Message) string {
	l := newLine(&m, 0)
	if l.name == "" {
		return l.text
	}
	return l.name + ": " + l.text
}

// Session chunks the messages of one session, which the caller gives sorted
// by Seq ascending without duplicate Seqs. scope identifies the session (for
// example namespace+"\x00"+sessionKey+"\x00"+sessionID) and goes into the
// chunk ids. It returns nil for no messages and panics if cfg is invalid:
// check it once with Validate.
//
// The unit is the message: each message is one chunk whose text is its Line,
// so a search hit is one whole turn and never pays for its neighbours. A
// message whose line alone exceeds the budget is split into pieces (Part 0,
// 1, ...), each starting with the message's "Speaker: " prefix and within the
// budget, cut after a sentence end in the second half of the piece, else
// after the last whitespace, else at the last rune that fits; a search
// returns such a message once, whole. A piece exceeds the budget only when
// the prefix alone takes more than half of it; then each piece holds at most
// half a budget of text. What helps ranking beyond the message itself (its
// date, the messages before it) is its Context.
//
// Chunks are prefix stable: a message's chunks depend only on it and the
// ContextMessages messages before it, so every chunk of Session(msgs[:n]) is
// a chunk of Session(msgs), and SessionAfter(msgs[:i], msgs[i:]) is the
// chunks of Session(msgs) from message i on.
func Session(cfg Config, scope string, msgs []Message) []Chunk {
	return SessionAfter(cfg, scope, nil, msgs)
}

// SessionAfter chunks msgs as Session does, given the messages before them
// (sorted, possibly none), which only give the first chunks their Context:
// SessionAfter(all[:i], all[i:]) is the chunks of Session(all) from all[i]
// on, Context included. A caller re-chunking a session's tail passes the
// last ContextMessages stored messages before it.
func SessionAfter(cfg Config, scope string, before, msgs []Message) []Chunk {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		panic("chunker: " + err.Error())
	}
	if len(msgs) == 0 {
		return nil
	}
	first := 0
	if n := max(cfg.ContextMessages, 0); len(before) > 0 && n > 0 {
		before = before[max(len(before)-n, 0):]
		first = len(before)
		msgs = append(append(make([]Message, 0, len(before)+len(msgs)), before...), msgs...)
	}
	b := builder{cfg: cfg, scope: scope, msgs: msgs, lines: make([]line, len(msgs))}
	for i := range msgs {
		b.lines[i] = newLine(&msgs[i], cfg.BudgetTokens)
	}
	for i := first; i < len(msgs); i++ {
		if b.lines[i].long {
			b.split(i)
			continue
		}
		b.message(i)
	}
	return b.out
}

// line is a message prepared for chunking, its texts valid UTF-8.
type line struct {
	name   string // speaker, or role when there is no speaker
	text   string
	prefix size // of name + ": ", or zero without a name
	size   size // of the whole line
	long   bool // the line alone exceeds the budget
}

func newLine(m *Message, budget int) line {
	l := line{name: m.Speaker, text: m.Text}
	if l.name == "" {
		l.name = m.Role
	}
	if l.name != "" {
		z, ok := measure(l.name)
		if !ok {
			l.name = strings.ToValidUTF8(l.name, "\uFFFD")
			z, _ = measure(l.name)
		}
		l.prefix = z.plus(size{narrow: 2})
	}
	z, ok := measure(l.text)
	if !ok {
		l.text = strings.ToValidUTF8(l.text, "\uFFFD")
		z, _ = measure(l.text)
	}
	l.size = l.prefix.plus(z)
	l.long = l.size.tokens() > budget
	return l
}

func (l *line) appendTo(buf []byte) []byte {
	if l.name != "" {
		buf = append(buf, l.name...)
		buf = append(buf, ": "...)
	}
	return append(buf, l.text...)
}

// builder holds the state of one Session call.
type builder struct {
	cfg   Config
	scope string
	msgs  []Message
	lines []line
	buf   []byte // id input: header, then the chunk text
	out   []Chunk
	// ctx is the Context of message ctxOf, kept for its later pieces.
	ctx   string
	ctxOf int
}

// message emits message i, which fits the budget, as one chunk.
func (b *builder) message(i int) {
	hdr := b.header(b.msgs[i].Seq, b.msgs[i].Seq, 0)
	b.buf = b.lines[i].appendTo(b.buf)
	b.emit(hdr, i, i, 0, b.lines[i].size)
}

// split emits the pieces of the over-long message i.
func (b *builder) split(i int) {
	l := &b.lines[i]
	limit := b.cfg.BudgetTokens
	if pt := l.prefix.tokens(); pt > limit/2 {
		limit = pt + limit/2
	}
	text := l.text
	for part := 0; ; part++ {
		n, z := cut(text, l.prefix, limit)
		hdr := b.header(b.msgs[i].Seq, b.msgs[i].Seq, part)
		piece := *l
		piece.text = text[:n]
		b.buf = piece.appendTo(b.buf)
		b.emit(hdr, i, i, part, z)
		text = text[n:]
		if text == "" {
			return
		}
	}
}

// cut returns the length of the next piece of text to split off, and the
// size of that piece with a prefix of size z, keeping it within limit tokens.
// It takes at least one rune of a non-empty text.
func cut(text string, z size, limit int) (int, size) {
	var (
		end, sent, space int
		sentZ, spaceZ    size
		prev             rune
	)
	for i := 0; i < len(text); {
		r, n := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(text[i:])
		}
		next := z
		if isWide(r) {
			next.wide++
		} else {
			next.narrow += n
		}
		if next.tokens() > limit && end > 0 {
			break
		}
		z, i, end = next, i+n, i+n
		if unicode.IsSpace(r) {
			space, spaceZ = end, z
		}
		switch r {
		case '\n', '。', '！', '？':
			sent, sentZ = end, z
		case ' ', '\t':
			if prev == '.' || prev == '!' || prev == '?' {
				sent, sentZ = end, z
			}
		}
		prev = r
	}
	switch {
	case end == len(text):
		return end, z
	case sent > end/2:
		return sent, sentZ
	case space > 0:
		return space, spaceZ
	}
	return end, z
}

// header starts the id input of a chunk in b.buf and returns its length.
func (b *builder) header(seqStart, seqEnd int64, part int) int {
	b.buf = append(b.buf[:0], idDomain...)
	b.buf = binary.AppendUvarint(b.buf, uint64(len(b.scope)))
	b.buf = append(b.buf, b.scope...)
	b.buf = binary.BigEndian.AppendUint64(b.buf, uint64(seqStart))
	b.buf = binary.BigEndian.AppendUint64(b.buf, uint64(seqEnd))
	b.buf = binary.BigEndian.AppendUint64(b.buf, uint64(part))
	return len(b.buf)
}

// emit appends the chunk whose text follows the header of length hdr in b.buf.
func (b *builder) emit(hdr, start, end, part int, z size) {
	c := Chunk{
		SeqStart: b.msgs[start].Seq,
		SeqEnd:   b.msgs[end].Seq,
		Part:     part,
		Text:     string(b.buf[hdr:]),
		Tokens:   z.tokens(),
	}
	for i := start; i <= end; i++ {
		t := b.msgs[i].Time
		if t.IsZero() {
			continue
		}
		if c.TimeStart.IsZero() || t.Before(c.TimeStart) {
			c.TimeStart = t
		}
		if c.TimeEnd.IsZero() || t.After(c.TimeEnd) {
			c.TimeEnd = t
		}
	}
	if part == 0 || b.ctxOf != start {
		// The pieces of a split message share one context: build it once.
		b.ctx, b.ctxOf = b.context(start, c.TimeStart), start
	}
	if c.Context = b.ctx; c.Context != "" {
		// The context is part of the identity: a chunk whose context changed
		// is a new chunk (re-indexed, re-embedded).
		b.buf = binary.AppendUvarint(b.buf, uint64(len(c.Context)))
		b.buf = append(b.buf, c.Context...)
	}
	sum := sha256.Sum256(b.buf)
	c.ID = hex.EncodeToString(sum[:16])
	b.out = append(b.out, c)
}

// context returns the Context of a chunk whose first message is msgs[start]
// and whose earliest time is t: its date, then the lines of up to ContextMessages messages
// before it, nearest last, as many as fit ContextTokens (the nearest first;
// a line too long for what is left is cut to its start).
func (b *builder) context(start int, t time.Time) string {
	var date string
	if !t.IsZero() {
		date = t.UTC().Format("2 January 2006")
	}
	from := max(start-max(b.cfg.ContextMessages, 0), 0)
	left := b.cfg.ContextTokens
	keep := start
	var cut0 int // bytes kept of the line at keep when it is cut
	for i := start - 1; i >= from && left > 0; i-- {
		z := b.lines[i].size.tokens()
		if z > left {
			n, _ := cutLine(&b.lines[i], left)
			keep, cut0 = i, n
			break
		}
		left -= z
		keep = i
	}
	if date == "" && keep == start {
		return ""
	}
	var sb strings.Builder
	sb.WriteString(date)
	for i := keep; i < start; i++ {
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		var buf []byte
		buf = b.lines[i].appendTo(buf)
		if i == keep && cut0 > 0 {
			buf = buf[:cut0]
		}
		sb.Write(buf)
	}
	return sb.String()
}

// cutLine returns how many bytes of l's rendered line fit limit tokens.
func cutLine(l *line, limit int) (int, size) {
	var full []byte
	full = l.appendTo(full)
	return cut(string(full), size{}, limit)
}
