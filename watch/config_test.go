package watch_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"memindex/watch"
)

// TestConfigValidate: each bad setting is an ErrInvalid naming its field.
func TestConfigValidate(t *testing.T) {
	ok := watch.Config{Dir: "notes", Namespace: "proj", StateFile: "s.json"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", ok, err)
	}
	for field, c := range map[string]func(*watch.Config){
		"Dir":        func(c *watch.Config) { c.Dir = "" },
		"Namespace":  func(c *watch.Config) { c.Namespace = "a b" },
		"Debounce":   func(c *watch.Config) { c.Debounce = -1 },
		"StateFile":  func(c *watch.Config) { c.StateFile = "" },
		"Excludes":   func(c *watch.Config) { c.Excludes = []string{"["} },
		"AckTimeout": func(c *watch.Config) { c.AckTimeout = -1 },
	} {
		bad := ok
		c(&bad)
		if err := bad.Validate(); !errors.Is(err, watch.ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate with a bad %s = %v, want ErrInvalid naming it", field, err)
		}
	}
}

// TestDefaultStateFile: under $XDG_STATE_HOME, one file per folder,
// namespace and dirPath.
func TestDefaultStateFile(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_STATE_HOME", base)
	a, err := watch.DefaultStateFile("notes", "proj", "")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(a) != filepath.Join(base, "memindex", "watch") || !strings.HasPrefix(filepath.Base(a), "proj-") {
		t.Errorf("DefaultStateFile = %s, want %s/memindex/watch/proj-….json", a, base)
	}
	seen := map[string]bool{a: true}
	for _, o := range [][3]string{{"other", "proj", ""}, {"notes", "proj2", ""}, {"notes", "proj", "/src"}} {
		p, err := watch.DefaultStateFile(o[0], o[1], o[2])
		if err != nil || seen[p] {
			t.Errorf("DefaultStateFile%v = %s, %v; want a file of its own", o, p, err)
		}
		seen[p] = true
	}
}
