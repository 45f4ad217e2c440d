package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchLocomoSkipsOrFailsWithoutFiles checks that the locomo part is
// skipped when its files are absent and it was not asked for, and is an
// error when it was.
func TestBenchLocomoSkipsOrFailsWithoutFiles(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent.events.jsonl")
	var logged []string
	log := func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
	r, err := RunLocomoSuite(context.Background(), LocomoConfig{Events: absent, Dir: t.TempDir(), Modes: []string{"hybrid"}, Log: log})
	if err != nil || r != nil || len(logged) != 1 || !strings.Contains(logged[0], "skipped") {
		t.Errorf("not required: report %v, err %v, logged %q; want nil, nil and a skip", r, err, logged)
	}
	if _, err := RunLocomoSuite(context.Background(), LocomoConfig{Events: absent, Dir: t.TempDir(), Modes: []string{"hybrid"}, Required: true, Log: log}); err == nil {
		t.Error("required: no error, want one naming the absent file")
	}
}
