package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPublishBar draws publish's bar into a buffer: with a known size it
// ends at 100% with the events acknowledged; with an unknown size (stdin)
// it counts bytes and events without a percentage; either way its last
// drawing ends the line, so the summary does not run into it.
func TestPublishBar(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size      int64
		want      []string
		wantNoPct bool
	}{
		{"known size", 2000, []string{"100%", "2000 events", "2.0/2.0 kB"}, false},
		{"unknown size", 0, []string{"2000 events", "2.0 kB"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			bar := publishBar(&buf, tc.size)
			for range 2000 {
				if err := bar.Add64(1); err != nil {
					t.Fatalf("Add64: %v", err)
				}
			}
			bar.Describe("2000 events") // after the last byte, as publish's last acks come
			endBar(bar, &buf, true)
			out := buf.String()
			last := out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\r")+1:]
			for _, w := range tc.want {
				if !strings.Contains(last, w) {
					t.Errorf("the bar's last drawing %q does not show %q", last, w)
				}
			}
			if tc.wantNoPct && strings.Contains(last, "%") {
				t.Errorf("the bar's last drawing %q shows a percentage of an unknown size", last)
			}
			if !strings.HasSuffix(out, "\n") {
				t.Errorf("the bar does not end its line: %q", out[max(0, len(out)-80):])
			}
		})
	}
}
