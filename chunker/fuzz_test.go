package chunker

import (
	"strings"
	"testing"
)

// FuzzMarkdownSize: the sections of a file are bounded by its size, so a
// hostile file cannot make the worker allocate far more than it holds: each
// section's text is at most MaxChars runes, their total at most about twice
// the file (overlap is under half a section), and a heading path is made of
// the file's own heading lines.
func FuzzMarkdownSize(f *testing.F) {
	for _, s := range []string{
		"# A\nx\n## B\ny\n",
		strings.Repeat("#", 6) + " deep\n" + strings.Repeat("## h\n", 200),
		strings.Repeat("x", 5000),
		strings.Repeat("a\n", 3000),
		"```\n" + strings.Repeat("# not a heading\n", 100) + "```\n",
		"# 日本語\n" + strings.Repeat("漢字", 800),
	} {
		f.Add(s, uint16(0), uint16(0))
		f.Add(s, uint16(10), uint16(3))
	}
	f.Fuzz(func(t *testing.T, content string, max, overlap uint16) {
		cfg := MarkdownConfig{MaxChars: 8 + int(max)%400}
		cfg.OverlapChars = 1 + int(overlap)%((cfg.MaxChars-1)/2)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("fuzz config %+v invalid: %v", cfg, err)
		}
		ss := Markdown(cfg, "fuzz", content)
		total, lines := 0, strings.Count(content, "\n")+1
		for i, s := range ss {
			total += len(s.Text)
			if len(s.Heading) > len(content) {
				t.Fatalf("section %d: heading of %d bytes from a %d-byte file", i, len(s.Heading), len(content))
			}
		}
		if limit := 2*len(content) + 64; total > limit {
			t.Fatalf("Markdown() made %d bytes of section text from %d bytes, want at most %d", total, len(content), limit)
		}
		if len(ss) > len(content)+lines {
			t.Fatalf("Markdown() made %d sections from %d bytes", len(ss), len(content))
		}
	})
}
