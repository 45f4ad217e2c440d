package bench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// HotEventsFile is one load of the hot suite written as JSONL for
// `memindex publish`: the path, the case it is the load of, and how many
// events and messages it holds.
type HotEventsFile struct {
	Path     string `json:"path"`
	Case     string `json:"case"`
	Events   int    `json:"events"`
	Messages int    `json:"messages"`
}

// WriteHotEvents writes the events the hot suite's memindex cases publish
// (hotLoads: one, many, batched and many-batched; many-fresh is many's
// load and backlog one's) for n messages over sessions sessions, one JSONL file a
// case under dir, named hot-CASE-N.jsonl. The files are what the suite
// publishes in process, byte for byte, so that the same load can be
// published from outside by `memindex publish` into a `memindex serve`
// (scripts/e2e-ingest.sh): the path a user's publisher takes.
func WriteHotEvents(dir string, n, sessions int) ([]HotEventsFile, error) {
	if n < 1 || sessions < 1 {
		return nil, fmt.Errorf("hot events: %d messages over %d sessions: want at least one of each", n, sessions)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("hot events: %w", err)
	}
	var out []HotEventsFile
	for _, l := range hotLoads {
		lines := hotEvents(n, sessions, l.namespaces, l.per)
		path := filepath.Join(dir, fmt.Sprintf("hot-%s-%d.jsonl", l.key, n))
		if err := writeLines(path, lines); err != nil {
			return nil, fmt.Errorf("hot events: %w", err)
		}
		out = append(out, HotEventsFile{Path: path, Case: l.key, Events: len(lines), Messages: n})
	}
	return out, nil
}

// writeLines writes lines to path, each ended by a newline.
func writeLines(path string, lines [][]byte) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	for _, l := range lines {
		if _, err := w.Write(l); err != nil {
			return err
		}
		if err := w.WriteByte('\n'); err != nil {
			return err
		}
	}
	return w.Flush()
}
