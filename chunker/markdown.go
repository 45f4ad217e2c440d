package chunker

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

const (
	defaultMaxChars     = 1600
	defaultOverlapChars = 200
	// mdIDDomain starts the hashed input of every section id; a change to the
	// id scheme changes it.
	mdIDDomain = "memindex/md/v1\x00"
)

// MarkdownConfig configures file chunking. The zero MarkdownConfig gives the
// defaults.
type MarkdownConfig struct {
	MaxChars     int // budget per section in characters (runes), default 1600 when 0
	OverlapChars int // overlap carried into the next piece when a long block is split, default 200 when 0; must be < MaxChars/2
}

// WithDefaults returns c with each zero setting replaced by its default.
func (c MarkdownConfig) WithDefaults() MarkdownConfig {
	if c.MaxChars == 0 {
		c.MaxChars = defaultMaxChars
	}
	if c.OverlapChars == 0 {
		c.OverlapChars = defaultOverlapChars
	}
	return c
}

// Validate checks the settings c has once defaults are applied, so the zero
// MarkdownConfig is valid. The error wraps ErrInvalidConfig.
func (c MarkdownConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.MaxChars < 0:
		return fmt.Errorf("budget of %d chars is negative: %w", c.MaxChars, ErrInvalidConfig)
	case c.OverlapChars < 0:
		return fmt.Errorf("overlap of %d chars is negative: %w", c.OverlapChars, ErrInvalidConfig)
	case c.OverlapChars > (c.MaxChars-1)/2: // 2*overlap >= budget, without overflow
		return fmt.Errorf("overlap of %d chars is not under half the budget of %d: %w",
			c.OverlapChars, c.MaxChars, ErrInvalidConfig)
	}
	return nil
}

// Section is one chunk of a markdown file: a range of its lines, or a piece
// of one line too long for a section.
type Section struct {
	ID        string // stable id: hex of 16 bytes of SHA-256 over scope, LineStart, LineEnd, the piece index of a split line and Text
	LineStart int    // 1-based first line
	LineEnd   int    // 1-based last line (inclusive)
	Heading   string // the heading path, e.g. "Setup > Database" ("" before the first heading)
	Text      string // the section's lines joined by "\n", exactly as in the file but for a trailing "\r"
	Tokens    int    // EstimateTokens(Text)
}

// Markdown splits content, a markdown file, into sections in file order.
// scope identifies the file (for example namespace+"\x00"+path) and goes into
// the ids. It returns nil for content that is empty or only whitespace and
// panics if cfg is invalid: check it once with Validate.
//
// Lines are split on "\n" (a final "\n" ends the last line rather than
// starting an empty one) and lose a trailing "\r". Every ATX heading ("#" to
// "######" after at most 3 spaces, outside fenced code blocks) starts a new
// section; lines before the first heading form a section with an empty
// Heading. Setext headings are not recognized. A fenced code block opens with
// at least three "`" or "~" and closes with at least as many of the same
// character; an unclosed one runs to the end of the file. Blank lines at the
// edges of a section are left out of it.
//
// A section of at most MaxChars runes (counting the "\n" between lines) is one
// Section. A longer one is split into blocks: the heading line, fenced code
// blocks and paragraphs (runs of non-blank lines). Pieces pack whole blocks
// greedily up to MaxChars; a paragraph longer than MaxChars is packed line by
// line instead. Each piece but the first of a run starts with up to
// OverlapChars of whole lines from the end of the piece before it (so their
// line ranges overlap), when those lines are outside code blocks and the piece
// still fits MaxChars. Two kinds of Section break the budget rule:
//
//   - A fenced code block longer than MaxChars is kept whole as its own
//     Section, which may exceed MaxChars: cutting code would hurt retrieval
//     more than the size does.
//   - A single line longer than MaxChars is cut at rune boundaries into pieces
//     of MaxChars runes (the last may be shorter). Each piece is a Section
//     with LineStart == LineEnd and a Text that is only part of the line; the
//     pieces' Texts concatenate to the line. They carry no overlap.
//
// Every other Section's Text is exactly lines LineStart..LineEnd joined by
// "\n". Every line with non-whitespace content is in some Section, ids are
// unique within a file, and the output is a deterministic function of cfg,
// scope and content.
func Markdown(cfg MarkdownConfig, scope, content string) []Section {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		panic("chunker: " + err.Error())
	}
	if strings.TrimSpace(content) == "" {
		return nil
	}
	d := newMDDoc(content)
	s := mdSplitter{cfg: cfg, scope: scope, d: d}
	var stack []mdHeading
	start := 0
	heading := ""
	for i := 0; i <= len(d.lines); i++ {
		if i < len(d.lines) && d.kinds[i] != mdHeadingLine {
			continue
		}
		if i > start {
			s.section(start, i-1, heading)
		}
		if i == len(d.lines) {
			break
		}
		level, title := parseATX(d.lines[i])
		for len(stack) > 0 && stack[len(stack)-1].level >= level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, mdHeading{level, title})
		heading = headingPath(stack)
		start = i
	}
	return s.out
}

// mdKind classifies a line of a markdown file.
type mdKind uint8

const (
	mdText        mdKind = iota // non-blank line outside code
	mdBlank                     // whitespace-only line outside code
	mdHeadingLine               // ATX heading outside code
	mdCode                      // line of a fenced code block, fences included
)

type mdHeading struct {
	level int
	title string
}

func headingPath(stack []mdHeading) string {
	var b strings.Builder
	for _, h := range stack {
		if h.title == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" > ")
		}
		b.WriteString(h.title)
	}
	return b.String()
}

// mdDoc is a markdown file split into classified lines.
type mdDoc struct {
	lines   []string
	kinds   []mdKind
	codeEnd []int // for the opening fence line of a code block, its last line; else -1
	pre     []int // pre[i] is the runes of lines[:i], each counted with one "\n"
}

func newMDDoc(content string) *mdDoc {
	// A final "\n" ends the last line rather than starting an empty one.
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	d := &mdDoc{
		lines:   lines,
		kinds:   make([]mdKind, len(lines)),
		codeEnd: make([]int, len(lines)),
		pre:     make([]int, len(lines)+1),
	}
	open := -1 // opening fence line of the code block we are in
	var fenceChar byte
	var fenceLen int
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		lines[i] = l
		d.codeEnd[i] = -1
		d.pre[i+1] = d.pre[i] + utf8.RuneCountInString(l) + 1
		if open >= 0 {
			d.kinds[i] = mdCode
			if c, n, rest, ok := fence(l); ok && c == fenceChar && n >= fenceLen && strings.TrimSpace(rest) == "" {
				d.codeEnd[open] = i
				open = -1
			}
			continue
		}
		if c, n, rest, ok := fence(l); ok && (c == '~' || !strings.Contains(rest, "`")) {
			d.kinds[i] = mdCode
			open, fenceChar, fenceLen = i, c, n
			continue
		}
		switch {
		case strings.TrimSpace(l) == "":
			d.kinds[i] = mdBlank
		case isATX(l):
			d.kinds[i] = mdHeadingLine
		default:
			d.kinds[i] = mdText
		}
	}
	if open >= 0 {
		d.codeEnd[open] = len(lines) - 1
	}
	return d
}

// chars returns the runes of lines a..b joined by "\n".
func (d *mdDoc) chars(a, b int) int { return d.pre[b+1] - d.pre[a] - 1 }

// indent returns l without up to 3 leading spaces, and false if l starts with
// more indentation than that (a tab counts as more).
func indent(l string) (string, bool) {
	for n := 0; n < 4; n++ {
		if n == len(l) || l[n] != ' ' && l[n] != '\t' {
			return l[n:], true
		}
		if l[n] == '\t' {
			return "", false
		}
	}
	return "", false
}

// fence reports whether l is a code fence line, with its character, the
// length of its run and the rest of the line after the run.
func fence(l string) (c byte, n int, rest string, ok bool) {
	t, ok := indent(l)
	if !ok || len(t) < 3 || t[0] != '`' && t[0] != '~' {
		return 0, 0, "", false
	}
	c = t[0]
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 {
		return 0, 0, "", false
	}
	return c, n, t[n:], true
}

func isATX(l string) bool {
	level, _ := parseATX(l)
	return level > 0
}

// parseATX returns the level and title of the ATX heading l, or level 0 when
// l is not one.
func parseATX(l string) (level int, title string) {
	t, ok := indent(l)
	if !ok {
		return 0, ""
	}
	for level < len(t) && t[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || level < len(t) && t[level] != ' ' && t[level] != '\t' {
		return 0, ""
	}
	title = strings.TrimSpace(t[level:])
	if k := strings.TrimRight(title, "#"); k == "" {
		title = ""
	} else if k != title && (k[len(k)-1] == ' ' || k[len(k)-1] == '\t') {
		title = strings.TrimSpace(k)
	}
	return level, title
}

// mdAtom is a run of lines that a split keeps together.
type mdAtom struct {
	start, end int  // line indices, inclusive
	code       bool // a fenced code block
	long       bool // over the budget: a code block or single line
}

// mdSplitter holds the state of one Markdown call.
type mdSplitter struct {
	cfg   MarkdownConfig
	scope string
	d     *mdDoc
	atoms []mdAtom
	buf   []byte
	out   []Section
}

func (s *mdSplitter) blank(i int) bool { return s.d.kinds[i] == mdBlank }

// section emits the sections of lines a..b, which start with heading.
func (s *mdSplitter) section(a, b int, heading string) {
	for a <= b && s.blank(a) {
		a++
	}
	for b >= a && s.blank(b) {
		b--
	}
	if a > b {
		return
	}
	d, budget := s.d, s.cfg.MaxChars
	if d.chars(a, b) <= budget {
		s.emit(a, b, 0, heading, s.join(a, b))
		return
	}
	s.atoms = s.atoms[:0]
	for i := a; i <= b; {
		switch {
		case s.blank(i):
			i++
		case d.codeEnd[i] >= 0 || d.kinds[i] == mdCode:
			// A code block starts with its fence; a clipped block at the edge
			// of a section (trailing blanks of an unclosed fence) ends at b.
			j := b
			if d.codeEnd[i] >= 0 && d.codeEnd[i] < b {
				j = d.codeEnd[i]
			}
			if d.codeEnd[i] < 0 {
				for j = i; j < b && d.kinds[j+1] == mdCode && d.codeEnd[j+1] < 0; j++ {
				}
			}
			s.atoms = append(s.atoms, mdAtom{start: i, end: j, code: true, long: d.chars(i, j) > budget})
			i = j + 1
		case d.kinds[i] == mdHeadingLine:
			s.atoms = append(s.atoms, mdAtom{start: i, end: i, long: d.chars(i, i) > budget})
			i++
		default:
			j := i
			for j < b && d.kinds[j+1] == mdText {
				j++
			}
			if d.chars(i, j) <= budget {
				s.atoms = append(s.atoms, mdAtom{start: i, end: j})
			} else {
				for k := i; k <= j; k++ {
					s.atoms = append(s.atoms, mdAtom{start: k, end: k, long: d.chars(k, k) > budget})
				}
			}
			i = j + 1
		}
	}
	s.pack(heading)
}

// pack emits the pieces of the atoms of one over-long section.
func (s *mdSplitter) pack(heading string) {
	d, budget := s.d, s.cfg.MaxChars
	start := -1 // first line of the open piece, or -1
	end := -1   // last line of the open piece
	for k := 0; k < len(s.atoms); k++ {
		at := s.atoms[k]
		if at.long {
			if start >= 0 {
				s.emit(start, end, 0, heading, s.join(start, end))
				start = -1
			}
			if at.code {
				s.emit(at.start, at.end, 0, heading, s.join(at.start, at.end))
			} else {
				s.runes(at.start, heading)
			}
			continue
		}
		if start < 0 {
			start, end = at.start, at.end
			continue
		}
		if d.chars(start, at.end) <= budget {
			end = at.end
			continue
		}
		s.emit(start, end, 0, heading, s.join(start, end))
		start, end = s.overlap(start, end, at.end), at.end
		if start < 0 {
			start = at.start
		}
	}
	if start >= 0 {
		s.emit(start, end, 0, heading, s.join(start, end))
	}
}

// overlap returns the first line of the overlap that the piece after the
// piece a..b, running to line next, starts with, or -1 for none: the earliest
// line m in (a, b] such that lines m..b are outside code, take at most
// OverlapChars, and lines m..next fit the budget.
func (s *mdSplitter) overlap(a, b, next int) int {
	d, best := s.d, -1
	for m := b; m > a; m-- {
		if d.kinds[m] == mdCode || d.chars(m, b) > s.cfg.OverlapChars || d.chars(m, next) > s.cfg.MaxChars {
			break
		}
		if !s.blank(m) {
			best = m
		}
	}
	return best
}

// runes emits the pieces of line i, which is over the budget, cut at rune
// boundaries.
func (s *mdSplitter) runes(i int, heading string) {
	l := s.d.lines[i]
	for part := 0; l != ""; part++ {
		n, cut := 0, 0
		for cut < len(l) && n < s.cfg.MaxChars {
			_, w := utf8.DecodeRuneInString(l[cut:])
			cut += w
			n++
		}
		s.emit(i, i, part, heading, l[:cut])
		l = l[cut:]
	}
}

func (s *mdSplitter) join(a, b int) string {
	if a == b {
		return s.d.lines[a]
	}
	return strings.Join(s.d.lines[a:b+1], "\n")
}

// emit appends the section of lines a..b (0-based) with the given text.
func (s *mdSplitter) emit(a, b, part int, heading, text string) {
	s.buf = append(s.buf[:0], mdIDDomain...)
	s.buf = binary.AppendUvarint(s.buf, uint64(len(s.scope)))
	s.buf = append(s.buf, s.scope...)
	s.buf = binary.BigEndian.AppendUint64(s.buf, uint64(a+1))
	s.buf = binary.BigEndian.AppendUint64(s.buf, uint64(b+1))
	s.buf = binary.BigEndian.AppendUint64(s.buf, uint64(part))
	s.buf = append(s.buf, text...)
	sum := sha256.Sum256(s.buf)
	s.out = append(s.out, Section{
		ID:        hex.EncodeToString(sum[:16]),
		LineStart: a + 1,
		LineEnd:   b + 1,
		Heading:   heading,
		Text:      text,
		Tokens:    EstimateTokens(text),
	})
}
