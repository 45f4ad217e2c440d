package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"memindex"
)

// TestPublishWatch runs `memindex publish --files DIR --watch --json`: one
// JSON line per event sent (the start sync's, then a file written while
// watched), a synced and a stopped summary, and a clean stop when its
// context ends; --watch without --files and a missing folder are errors
// that say so.
func TestPublishWatch(t *testing.T) {
	n := testNode(t, 2)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "start.md"), []byte("The marmot wakes.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := []string{"--server", n.URL(), "--namespace", "proj"}
	state := filepath.Join(t.TempDir(), "state.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runPublish(ctx, append(srv, "--files", dir, "--watch", "--json", "--debounce", "50ms", "--state", state), nil, &out, &errOut)
	}()
	lines := func() []map[string]any {
		var ls []map[string]any
		for l := range strings.Lines(out.String()) {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil {
				ls = append(ls, m)
			}
		}
		return ls
	}
	has := func(typ, path string) bool {
		for _, l := range lines() {
			if l["type"] == typ && (path == "" || l["path"] == path) {
				return true
			}
		}
		return false
	}
	waitUntil(t, 20*time.Second, "the start sync", func() bool { return has("synced", "") })
	if !has(memindex.TypeFileUpserted, "start.md") {
		t.Fatalf("output %s: want start.md upserted before synced", out.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "later.md"), []byte("The marmot sleeps.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "later.md to be sent", func() bool { return has(memindex.TypeFileUpserted, "later.md") })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("publish --watch: %v\n%s", err, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("publish --watch did not stop within 20s of its context's end")
	}
	ls := lines()
	if last := ls[len(ls)-1]; last["type"] != "stopped" || last["files"] != 2.0 || last["upserted"] != 2.0 {
		t.Errorf("last line %v, want the stopped summary with 2 files upserted", last)
	}
	var b bytes.Buffer
	if err := runPublish(context.Background(), append(srv, "--watch", "x.jsonl"), nil, &b, &b); err == nil || !strings.Contains(err.Error(), "--watch needs --files") {
		t.Errorf("--watch without --files = %v, want an error saying it needs --files", err)
	}
	missing := filepath.Join(dir, "nope")
	if err := runPublish(context.Background(), append(srv, "--files", missing, "--watch", "--state", state), nil, &b, &b); err == nil || !strings.Contains(err.Error(), "nope: memory folder does not exist") {
		t.Errorf("--watch of a missing folder = %v, want it named as missing", err)
	}
}
