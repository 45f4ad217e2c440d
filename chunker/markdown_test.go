package chunker

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// mdSpan is what the table tests compare of a Section.
type mdSpan struct {
	Start, End int
	Heading    string
}

func mdSpans(ss []Section) []mdSpan {
	out := make([]mdSpan, len(ss))
	for i, s := range ss {
		out[i] = mdSpan{s.LineStart, s.LineEnd, s.Heading}
	}
	return out
}

// mdLines returns the lines of content as Markdown numbers them.
func mdLines(content string) []string {
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func TestMarkdownConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  MarkdownConfig
		ok   bool
	}{
		{"zero", MarkdownConfig{}, true},
		{"small", MarkdownConfig{MaxChars: 3, OverlapChars: 1}, true},
		{"overlap half", MarkdownConfig{MaxChars: 100, OverlapChars: 50}, false},
		{"overlap just under half", MarkdownConfig{MaxChars: 101, OverlapChars: 50}, true},
		{"default overlap too big", MarkdownConfig{MaxChars: 400}, false},
		{"negative max", MarkdownConfig{MaxChars: -1, OverlapChars: 1}, false},
		{"negative overlap", MarkdownConfig{OverlapChars: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate()=%v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate()=%v, want it to wrap ErrInvalidConfig", err)
			}
		})
	}
	if got := (MarkdownConfig{}).WithDefaults(); got != (MarkdownConfig{MaxChars: 1600, OverlapChars: 200}) {
		t.Fatalf("WithDefaults()=%+v, want 1600/200", got)
	}
}

func TestMarkdownInvalidConfigPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Markdown with an invalid config did not panic")
		}
	}()
	Markdown(MarkdownConfig{MaxChars: 10}, "s", "text")
}

func TestMarkdownHeadings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		want    []mdSpan
	}{
		{"empty", "", nil},
		{"whitespace only", "  \n\t\n\r\n", nil},
		{"no headings", "just\ntext\n", []mdSpan{{1, 2, ""}}},
		{"headings",
			"intro\n# A\na1\n## B\nb1\n# C\nc1",
			[]mdSpan{{1, 1, ""}, {2, 3, "A"}, {4, 5, "A > B"}, {6, 7, "C"}}},
		{"nested path",
			"# A\n### C\nx\n## B\ny\n#### D\nz\n# E\n",
			[]mdSpan{{1, 1, "A"}, {2, 3, "A > C"}, {4, 5, "A > B"}, {6, 7, "A > B > D"}, {8, 8, "E"}}},
		{"closing hashes and indent",
			"  ## Setup ##\nx\n### Database #\ny\n",
			[]mdSpan{{1, 2, "Setup"}, {3, 4, "Setup > Database"}}},
		{"not headings",
			"#hashtag\n####### seven\n    # indented code\n\t# tab\n",
			[]mdSpan{{1, 4, ""}}},
		{"code fence hides headings",
			"# A\n```sh\n# a comment\n```\n# B\nx\n",
			[]mdSpan{{1, 4, "A"}, {5, 6, "B"}}},
		{"tilde fence holds backtick fence",
			"# A\n~~~\n```\n# no\n~~~\n# B\n",
			[]mdSpan{{1, 5, "A"}, {6, 6, "B"}}},
		{"short closing fence does not close",
			"# A\n````\n```\n# no\n````\n# B\n",
			[]mdSpan{{1, 5, "A"}, {6, 6, "B"}}},
		{"unclosed fence at EOF",
			"# A\n```go\n# no\n\n# still no\n",
			[]mdSpan{{1, 5, "A"}}},
		{"blank edges trimmed",
			"\n\n# A\n\ntext\n\n\n# B\n\n",
			[]mdSpan{{3, 5, "A"}, {8, 8, "B"}}},
		{"blank preamble skipped", "\n \n# A\n", []mdSpan{{3, 3, "A"}}},
		{"empty heading title", "# A\n##\nx\n", []mdSpan{{1, 1, "A"}, {2, 3, "A"}}},
		{"CRLF",
			"# A\r\nx\r\n\r\n# B\r\ny\r\n",
			[]mdSpan{{1, 2, "A"}, {4, 5, "B"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := MarkdownConfig{}
			got := Markdown(cfg, "ns\x00f.md", tc.content)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("Markdown()=%+v, want nil", got)
				}
				return
			}
			if g := mdSpans(got); !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("Markdown() spans=%+v, want %+v", g, tc.want)
			}
			checkSections(t, cfg, tc.content, got)
		})
	}
}

func TestMarkdownCRLFText(t *testing.T) {
	got := Markdown(MarkdownConfig{}, "s", "# A\r\nx\r\n")
	if len(got) != 1 || got[0].Text != "# A\nx" {
		t.Fatalf("Markdown()=%+v, want one section with Text %q", got, "# A\nx")
	}
	if got[0].Tokens != EstimateTokens("# A\nx") {
		t.Fatalf("Tokens=%d, want %d", got[0].Tokens, EstimateTokens("# A\nx"))
	}
}

func TestMarkdownSplit(t *testing.T) {
	small := MarkdownConfig{MaxChars: 40, OverlapChars: 12}
	code := "```\n" + strings.Repeat("0123456789\n", 6) + "```"
	for _, tc := range []struct {
		name    string
		cfg     MarkdownConfig
		content string
		want    []mdSpan
	}{
		{"paragraphs packed with overlap",
			small,
			"# H\n" + // 1
				"first para line\n" + // 2
				"second line\n" + // 3
				"\n" + // 4
				"another para\n" + // 5
				"tail line\n" + // 6
				"\n" + // 7
				"third para here\n", // 8
			// [1,3] is 31 chars; adding line 5..6 exceeds 40. The next piece
			// overlaps "second line" (11 <= 12 chars): lines 3..6 are 35 chars.
			// Then "tail line" (9) overlaps into 6..8 (26 chars).
			[]mdSpan{{1, 3, "H"}, {3, 6, "H"}, {6, 8, "H"}}},
		{"long paragraph split at lines",
			small,
			"aaaaaaaaaa 1\nbbbbbbbbbb 2\ncccccccccc 3\ndddddddddd 4\neeeeeeeeee 5\n",
			// Lines are 12 chars: three fit (38); overlap is one line.
			[]mdSpan{{1, 3, ""}, {3, 5, ""}}},
		{"long code block kept whole",
			small,
			"# H\nintro\n" + code + "\nafter\n",
			[]mdSpan{{1, 2, "H"}, {3, 10, "H"}, {11, 11, "H"}}},
		{"code block that fits is packed",
			MarkdownConfig{MaxChars: 60, OverlapChars: 12},
			"# H\n\nintro text\n\n```\nx := 1\n```\n\n" + strings.Repeat("z", 30) + "\n\n" + strings.Repeat("y", 30) + "\n",
			// The code block packs with the heading and intro (31 chars); each
			// 30-char paragraph is too long to overlap and to join the other.
			[]mdSpan{{1, 7, "H"}, {9, 9, "H"}, {11, 11, "H"}}},
		{"no overlap out of code",
			small,
			"```\n" + strings.Repeat("c", 30) + "\n```\n" + strings.Repeat("p", 30) + "\n",
			[]mdSpan{{1, 3, ""}, {4, 4, ""}}},
		{"huge line split at runes",
			MarkdownConfig{MaxChars: 10, OverlapChars: 2},
			"# H\n" + strings.Repeat("x", 25) + "\nend\n",
			[]mdSpan{{1, 1, "H"}, {2, 2, "H"}, {2, 2, "H"}, {2, 2, "H"}, {3, 3, "H"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Markdown(tc.cfg, "s", tc.content)
			if g := mdSpans(got); !reflect.DeepEqual(g, tc.want) {
				for _, s := range got {
					t.Logf("%d-%d %q", s.LineStart, s.LineEnd, s.Text)
				}
				t.Fatalf("Markdown() spans=%+v, want %+v", g, tc.want)
			}
			checkSections(t, tc.cfg, tc.content, got)
		})
	}
}

func TestMarkdownRunePieces(t *testing.T) {
	line := "日本語のテキスト😀🎉👩‍👩‍👧 mixed ascii and é ü"
	cfg := MarkdownConfig{MaxChars: 5, OverlapChars: 1}
	got := Markdown(cfg, "s", line)
	var b strings.Builder
	for _, s := range got {
		if s.LineStart != 1 || s.LineEnd != 1 {
			t.Fatalf("piece lines %d-%d, want 1-1", s.LineStart, s.LineEnd)
		}
		if !utf8.ValidString(s.Text) {
			t.Fatalf("piece %q is not valid UTF-8", s.Text)
		}
		if n := utf8.RuneCountInString(s.Text); n > 5 || n == 0 {
			t.Fatalf("piece %q has %d runes, want 1..5", s.Text, n)
		}
		b.WriteString(s.Text)
	}
	if b.String() != line {
		t.Fatalf("pieces join to %q, want %q", b.String(), line)
	}
	if want := (utf8.RuneCountInString(line) + 4) / 5; len(got) != want {
		t.Fatalf("got %d pieces, want %d", len(got), want)
	}
	checkSections(t, cfg, line, got)
}

func TestMarkdownIDs(t *testing.T) {
	content := "# A\nalpha\n# B\nbeta\n"
	a := Markdown(MarkdownConfig{}, "ns\x00a.md", content)
	if again := Markdown(MarkdownConfig{}, "ns\x00a.md", content); !reflect.DeepEqual(a, again) {
		t.Fatalf("Markdown() not deterministic: %+v then %+v", a, again)
	}
	// Pinned: a change to the id scheme must change mdIDDomain.
	if got, want := a[0].ID, mdID("ns\x00a.md", 1, 2, 0, "# A\nalpha"); got != want {
		t.Fatalf("ID=%s, want %s", got, want)
	}
	if len(a[0].ID) != 32 {
		t.Fatalf("ID %q has %d hex digits, want 32", a[0].ID, len(a[0].ID))
	}
	for _, tc := range []struct {
		name    string
		scope   string
		content string
		same    [2]bool // whether the ids of A and B stay the same
	}{
		{"other scope", "ns\x00b.md", content, [2]bool{false, false}},
		{"edit in A", "ns\x00a.md", "# A\nalphA\n# B\nbeta\n", [2]bool{false, true}},
		{"A shifts B down", "ns\x00a.md", "# A\nalpha\n\n# B\nbeta\n", [2]bool{true, false}},
		{"CRLF keeps ids", "ns\x00a.md", "# A\r\nalpha\r\n# B\r\nbeta\r\n", [2]bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Markdown(MarkdownConfig{}, tc.scope, tc.content)
			for i := range 2 {
				if same := a[i].ID == b[i].ID; same != tc.same[i] {
					t.Fatalf("section %d: ids %s and %s, same=%v, want %v", i, a[i].ID, b[i].ID, same, tc.same[i])
				}
			}
		})
	}
	// Equal rune pieces of one line still get distinct ids.
	ps := Markdown(MarkdownConfig{MaxChars: 4, OverlapChars: 1}, "s", "abcdabcdabcd")
	if len(ps) != 3 || len(dedup(sectionIDs(ps))) != 3 {
		t.Fatalf("pieces %+v, want 3 with distinct ids", ps)
	}
}

// mdID computes a section id independently of the splitter.
func mdID(scope string, start, end, part int, text string) string {
	buf := []byte("memindex/md/v1\x00")
	buf = binary.AppendUvarint(buf, uint64(len(scope)))
	buf = append(buf, scope...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(start))
	buf = binary.BigEndian.AppendUint64(buf, uint64(end))
	buf = binary.BigEndian.AppendUint64(buf, uint64(part))
	sum := sha256.Sum256(append(buf, text...))
	return hex.EncodeToString(sum[:16])
}

func sectionIDs(ss []Section) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// checkSections asserts the invariants of Markdown(cfg, _, content) == ss:
//   - ss is nil exactly when content is only whitespace;
//   - 1 <= LineStart <= LineEnd <= number of lines, in file order (LineStart
//     and LineEnd never decrease, and only rune pieces repeat a range);
//   - Text is lines LineStart..LineEnd joined by "\n" — except for rune
//     pieces: LineStart == LineEnd, the line has more than MaxChars runes, and
//     the consecutive pieces of that line concatenate to it;
//   - Text has at most MaxChars runes, unless it is exactly one fenced code
//     block (its first line opens a fence whose block ends at LineEnd);
//   - every line with non-whitespace content is in some section;
//   - Tokens == EstimateTokens(Text), ids unique, Text valid UTF-8 when
//     content is.
func checkSections(t testing.TB, cfg MarkdownConfig, content string, ss []Section) {
	t.Helper()
	cfg = cfg.WithDefaults()
	if strings.TrimSpace(content) == "" {
		if ss != nil {
			t.Fatalf("Markdown(blank)=%+v, want nil", ss)
		}
		return
	}
	lines := mdLines(content)
	d := newMDDoc(content)
	covered := make([]bool, len(lines))
	seen := map[string]bool{}
	valid := utf8.ValidString(content)
	var piece strings.Builder // rune pieces of the current line so far
	pieceLine := 0
	flush := func() {
		if pieceLine != 0 && piece.String() != lines[pieceLine-1] {
			t.Fatalf("rune pieces of line %d join to %q, want %q", pieceLine, piece.String(), lines[pieceLine-1])
		}
		piece.Reset()
		pieceLine = 0
	}
	for i, s := range ss {
		if s.LineStart < 1 || s.LineStart > s.LineEnd || s.LineEnd > len(lines) {
			t.Fatalf("section %d: lines %d-%d out of 1-%d", i, s.LineStart, s.LineEnd, len(lines))
		}
		if i > 0 {
			p := ss[i-1]
			if s.LineStart < p.LineStart || s.LineEnd < p.LineEnd {
				t.Fatalf("section %d: lines %d-%d after %d-%d", i, s.LineStart, s.LineEnd, p.LineStart, p.LineEnd)
			}
		}
		if seen[s.ID] {
			t.Fatalf("section %d: duplicate id %s", i, s.ID)
		}
		seen[s.ID] = true
		if s.Tokens != EstimateTokens(s.Text) {
			t.Fatalf("section %d: Tokens=%d, want %d", i, s.Tokens, EstimateTokens(s.Text))
		}
		if valid && !utf8.ValidString(s.Text) {
			t.Fatalf("section %d: Text %q is not valid UTF-8", i, s.Text)
		}
		whole := strings.Join(lines[s.LineStart-1:s.LineEnd], "\n")
		n := utf8.RuneCountInString(s.Text)
		if s.Text != whole || pieceLine == s.LineStart {
			// A rune piece.
			line := lines[s.LineStart-1]
			if s.LineStart != s.LineEnd || utf8.RuneCountInString(line) <= cfg.MaxChars || n == 0 || n > cfg.MaxChars {
				t.Fatalf("section %d: lines %d-%d Text %q, want %q or a rune piece of an over-long line",
					i, s.LineStart, s.LineEnd, s.Text, whole)
			}
			if pieceLine != s.LineStart {
				flush()
				pieceLine = s.LineStart
			}
			piece.WriteString(s.Text)
			covered[s.LineStart-1] = true
			continue
		}
		flush()
		if i > 0 && ss[i-1].LineStart == s.LineStart && ss[i-1].LineEnd == s.LineEnd {
			t.Fatalf("section %d: repeats lines %d-%d", i, s.LineStart, s.LineEnd)
		}
		if n > cfg.MaxChars {
			_, _, _, isFence := fence(lines[s.LineStart-1])
			if !isFence || d.codeEnd[s.LineStart-1] != s.LineEnd-1 {
				t.Fatalf("section %d: lines %d-%d have %d runes > %d and are not one code block",
					i, s.LineStart, s.LineEnd, n, cfg.MaxChars)
			}
		}
		for l := s.LineStart; l <= s.LineEnd; l++ {
			covered[l-1] = true
		}
	}
	flush()
	for i, l := range lines {
		if !covered[i] && strings.TrimSpace(l) != "" {
			t.Fatalf("line %d %q is in no section", i+1, l)
		}
	}
}

func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{
		"",
		"# A\nx\n## B\ny\n",
		"# A\n```\n# no\n```\n# B\n",
		"~~~\n```\n~~~\n# x",
		"```go\nunclosed\n\n",
		"a\r\nb\r\n\r\n# c\r\n",
		strings.Repeat("word ", 300),
		"# H\n" + strings.Repeat("para line here\nmore\n\n", 40),
		"日本語😀\n" + strings.Repeat("漢", 500),
		"\xff\xfe# bad\n#\n",
	} {
		f.Add(s, uint16(0), uint16(0))
		f.Add(s, uint16(20), uint16(5))
	}
	f.Fuzz(func(t *testing.T, content string, max, overlap uint16) {
		cfg := MarkdownConfig{MaxChars: 8 + int(max)%400}
		cfg.OverlapChars = 1 + int(overlap)%((cfg.MaxChars-1)/2)
		ss := Markdown(cfg, "fuzz", content)
		checkSections(t, cfg, content, ss)
		if again := Markdown(cfg, "fuzz", content); !reflect.DeepEqual(ss, again) {
			t.Fatalf("Markdown() not deterministic")
		}
	})
}

func BenchmarkMarkdown(b *testing.B) {
	for _, kb := range []int{16, 256} {
		b.Run(fmt.Sprintf("kb=%d", kb), func(b *testing.B) {
			doc := markdownDoc(rand.New(rand.NewPCG(3, 4)), kb<<10)
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = len(Markdown(MarkdownConfig{}, "ns\x00doc.md", doc))
			}
			b.ReportMetric(float64(n), "sections/op")
		})
	}
}

// markdownDoc returns a markdown document of about size bytes: nested
// headings over paragraphs of chat-like text, lists and code blocks.
func markdownDoc(r *rand.Rand, size int) string {
	var b strings.Builder
	for b.Len() < size {
		switch k := r.IntN(10); {
		case k == 0:
			fmt.Fprintf(&b, "%s %s\n\n", strings.Repeat("#", 1+r.IntN(3)), chatText(r, 2+r.IntN(4)))
		case k == 1:
			b.WriteString("```go\n")
			for range 3 + r.IntN(30) {
				fmt.Fprintf(&b, "\tx := %q // %s\n", chatText(r, 2), chatText(r, 3))
			}
			b.WriteString("```\n\n")
		case k == 2:
			for range 2 + r.IntN(5) {
				fmt.Fprintf(&b, "- %s\n", chatText(r, 5+r.IntN(10)))
			}
			b.WriteString("\n")
		default:
			for range 1 + r.IntN(6) {
				b.WriteString(chatText(r, 8+r.IntN(12)))
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
