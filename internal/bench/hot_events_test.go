package bench

import (
	"bufio"
	"bytes"
	"os"
	"testing"

	"memindex"
)

// TestWriteHotEvents: each file holds the events the suite publishes for
// its case, line for line, and each line is an event publish accepts.
func TestWriteHotEvents(t *testing.T) {
	dir := t.TempDir()
	files, err := WriteHotEvents(dir, 500, 20)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][][]byte{
		HotCaseOne:         hotEvents(500, 20, 1, 1),
		HotCaseMany:        hotEvents(500, 20, hotManyNamespaces, 1),
		HotCaseBatched:     hotEvents(500, 20, 1, hotEventMessages),
		HotCaseManyBatched: hotEvents(500, 20, hotManyNamespaces, hotEventMessages),
	}
	if len(files) != len(want) {
		t.Fatalf("%d files, want %d", len(files), len(want))
	}
	for _, f := range files {
		lines, ok := want[f.Case]
		if !ok {
			t.Fatalf("file of unknown case %q", f.Case)
		}
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Join(lines, []byte("\n")); !bytes.Equal(bytes.TrimSuffix(b, []byte("\n")), got) {
			t.Fatalf("%s: not the suite's events for %s", f.Path, f.Case)
		}
		if f.Events != len(lines) || f.Messages != 500 {
			t.Fatalf("%s: %d events and %d messages, want %d and 500", f.Case, f.Events, f.Messages, len(lines))
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		namespaces := map[string]bool{}
		for sc.Scan() {
			ev, err := memindex.DecodeEvent(sc.Bytes())
			if err != nil {
				t.Fatalf("%s: %v", f.Case, err)
			}
			namespaces[ev.Namespace] = true
		}
		wantNS := 1
		if f.Case == HotCaseMany || f.Case == HotCaseManyBatched {
			wantNS = 20 // one a session: fewer sessions than hotManyNamespaces
		}
		if len(namespaces) != wantNS {
			t.Fatalf("%s: %d namespaces, want %d", f.Case, len(namespaces), wantNS)
		}
	}
	if _, err := WriteHotEvents(dir, 0, 20); err == nil {
		t.Fatal("no messages: want an error")
	}
}
