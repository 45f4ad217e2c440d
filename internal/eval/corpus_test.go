package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeCorpus writes a corpus directory of the given lines.
func writeCorpus(t testing.TB, name string, events, queries []string) string {
	t.Helper()
	dir := t.TempDir()
	for file, lines := range map[string][]string{name + ".events.jsonl": events, name + ".queries.jsonl": queries} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var tinyEvents = []string{
	`{"sessionKey":"c1","sessionId":"s1","seq":1,"messageId":"D1:1","speaker":"Ann","text":"I adopted a puppy named Biscuit."}`,
	``,
	`{"sessionKey":"c1","sessionId":"s1","seq":2,"messageId":"D1:2","speaker":"Bob","text":"Lovely! What breed?"}`,
	`{"sessionKey":"c2","sessionId":"s1","seq":1,"id":"m1","speaker":"Cat","text":"My sister moved to Lisbon."}`,
	`{"type":"record.upserted","id":"r1","text":"a record"}`,
}

var tinyQueries = []string{
	`{"queryId":"q1","sessionKey":"c1","question":"What is the name of Ann's puppy?","category":4,"categoryName":"single-hop","goldMessageIds":["D1:1","D1:1"]}`,
	`{"queryId":"q2","sessionKey":"c2","question":"Where did Cat's sister move?","category":4,"categoryName":"single-hop","goldMessageIds":["m1"]}`,
	`{"queryId":"q3","sessionKey":"c2","question":"Unanswerable?","category":5,"goldMessageIds":[]}`,
}

func TestLoad(t *testing.T) {
	dir := writeCorpus(t, "tiny", tinyEvents, tinyQueries)
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "tiny" || len(c.Events) != 4 || len(c.Messages) != 3 || len(c.Questions) != 2 || c.Skipped != 1 {
		t.Fatalf("Load()= name %q, %d events, %d messages, %d questions, %d skipped; want tiny, 4, 3, 2, 1",
			c.Name, len(c.Events), len(c.Messages), len(c.Questions), c.Skipped)
	}
	if got := c.Questions[0].Gold; len(got) != 1 {
		t.Fatalf("gold ids %q, want them distinct", got)
	}
	if got := c.MessageAt("c2", "s1", 1); got != "m1" {
		t.Fatalf("MessageAt(c2, s1, 1)=%q, want m1 (the id when there is no messageId)", got)
	}
	if got := c.SessionKeys(); strings.Join(got, ",") != "c1,c2" {
		t.Fatalf("SessionKeys()=%q, want c1,c2", got)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name     string
		events   []string
		queries  []string
		wantIs   error
		wantText string
	}{
		{"bad event JSON", []string{tinyEvents[0], `{"sessionKey":`}, tinyQueries, ErrBadLine, "tiny.events.jsonl:2:"},
		{"message without id", []string{tinyEvents[0], tinyEvents[1], `{"sessionKey":"c1","text":"hi"}`}, tinyQueries, ErrBadLine, "tiny.events.jsonl:3:"},
		{"question without sessionKey", tinyEvents, []string{tinyQueries[0], `{"question":"who?","goldMessageIds":["x"]}`}, ErrBadLine, "tiny.queries.jsonl:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeCorpus(t, "tiny", tt.events, tt.queries))
			if !errors.Is(err, tt.wantIs) || err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("Load() error %v, want %v naming %q", err, tt.wantIs, tt.wantText)
			}
		})
	}
	t.Run("two events files", func(t *testing.T) {
		dir := writeCorpus(t, "tiny", tinyEvents, tinyQueries)
		if err := os.WriteFile(filepath.Join(dir, "other.events.jsonl"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); !errors.Is(err, ErrCorpusFiles) {
			t.Fatalf("Load() error %v, want ErrCorpusFiles", err)
		}
	})
	t.Run("empty directory", func(t *testing.T) {
		if _, err := Load(t.TempDir()); !errors.Is(err, ErrCorpusFiles) {
			t.Fatalf("Load() error %v, want ErrCorpusFiles", err)
		}
	})
}
