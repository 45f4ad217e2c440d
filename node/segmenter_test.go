package node

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"memindex"
	"memindex/client"
	"memindex/store"
)

// segChildEnv names the data directory a child process of
// TestOpenLoadsTheSegmenterOnlyForHanText opens a node on.
const segChildEnv = "MEMINDEX_TEST_SEGMENTER_DATA"

// TestOpenLoadsTheSegmenterOnlyForHanText: a node whose shards hold Chinese
// text has the Chinese dictionary loaded when Open returns, so not even the
// first search after a start waits for it; a node whose shards hold none
// never loads it. The dictionary is process-wide and never unloaded, so each
// node is opened in a fresh process (this test binary run again) on a data
// directory filled here.
func TestOpenLoadsTheSegmenterOnlyForHanText(t *testing.T) {
	if dir := os.Getenv(segChildEnv); dir != "" {
		openAndReportSegmenter(t, dir)
		return
	}
	for _, tc := range []struct {
		name, text string
		want       bool
	}{
		{"han", "我下个月搬到里斯本，坐火车去。", true},
		{"english", "I move to Lisbon next month, by train.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fillShard(t, dir, tc.text)
			cmd := exec.Command(os.Args[0], "-test.run=^TestOpenLoadsTheSegmenterOnlyForHanText$", "-test.v")
			cmd.Env = append(os.Environ(), segChildEnv+"="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			want := "segmenter loaded at Open: false"
			if tc.want {
				want = "segmenter loaded at Open: true"
			}
			if !strings.Contains(string(out), want) {
				t.Fatalf("child output lacks %q:\n%s", want, out)
			}
			if strings.Contains(string(out), "DATA RACE") {
				t.Fatalf("child raced:\n%s", out)
			}
		})
	}
}

// fillShard runs a node on dir until one message of text is applied.
func fillShard(t *testing.T, dir, text string) {
	t.Helper()
	n, stop := runTestNode(t, testConfig(dir), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev := memindex.Event{Namespace: "agent-zh", SessionKey: "k", SessionID: "s", Seq: 1, Role: "user", Text: text}
	if _, err := client.NewClient(n.Conn()).Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the message applied", func() bool {
		var msgs int64
		for _, p := range n.Status(ctx).Partitions {
			msgs += p.Messages
		}
		return msgs == 1
	})
	stop()
}

// openAndReportSegmenter is the child's side: it opens a node on dir and
// prints whether the dictionary was loaded when Open returned.
func openAndReportSegmenter(t *testing.T, dir string) {
	if store.SegmenterLoaded() {
		t.Fatal("the dictionary is loaded before any shard is open")
	}
	n, err := Open(context.Background(), testConfig(dir), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	loaded := store.SegmenterLoaded()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("segmenter loaded at Open: %t", loaded)
}
