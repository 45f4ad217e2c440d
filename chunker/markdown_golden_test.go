package chunker

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestMarkdownGolden chunks the files of testdata/markdown with a small
// budget and compares the sections (lines, heading path, text) with the
// .golden.json next to each; `go test ./chunker -run Golden -update`
// rewrites them after a deliberate change.
func TestMarkdownGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "markdown", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	cfg := MarkdownConfig{MaxChars: 240, OverlapChars: 80}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			content, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			type golden struct {
				ID        string `json:"id"`
				LineStart int    `json:"lineStart"`
				LineEnd   int    `json:"lineEnd"`
				Heading   string `json:"heading"`
				Text      string `json:"text"`
			}
			var got []golden
			for _, s := range Markdown(cfg, "golden\x00"+filepath.Base(f), string(content)) {
				got = append(got, golden{s.ID, s.LineStart, s.LineEnd, s.Heading, s.Text})
			}
			b, _ := json.MarshalIndent(got, "", "  ")
			path := strings.TrimSuffix(f, ".md") + ".golden.json"
			if *updateGolden {
				if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if strings.TrimSpace(string(want)) != strings.TrimSpace(string(b)) {
				t.Fatalf("Markdown(%s) =\n%s\nwant\n%s", f, b, want)
			}
		})
	}
}
