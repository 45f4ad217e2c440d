package client

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"memindex"
)

// MaxMemoryFileBytes is the largest memory file an event carries: an
// event's limit less room for its other fields.
const MaxMemoryFileBytes = memindex.MaxEventBytes - 4096

// CheckExcludes returns an error naming the first of globs that is no
// valid filepath.Match pattern.
func CheckExcludes(globs []string) error {
	for _, g := range globs {
		if _, err := filepath.Match(g, ""); err != nil {
			return fmt.Errorf("bad glob %q: %w", g, err)
		}
	}
	return nil
}

// matchesExclude reports whether rel (slash-separated, relative to the
// memory folder) itself matches one of globs.
func matchesExclude(rel string, globs []string) bool {
	for _, g := range globs {
		if ok, _ := filepath.Match(g, rel); ok {
			return true
		}
	}
	return false
}

// ExcludedPath reports whether the walk of MemoryFileEvents leaves rel
// out: rel (slash-separated, relative to the memory folder) or one of the
// directories above it matches one of globs, as the walk skips a matching
// directory whole. The folder itself (".") is never excluded, so ".*"
// leaves out dot files and directories, not everything.
func ExcludedPath(rel string, globs []string) bool {
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if matchesExclude(p, globs) {
			return true
		}
	}
	return false
}

// IsMemoryFile reports whether name is a memory file by its extension
// (.md in any case).
func IsMemoryFile(name string) bool { return strings.EqualFold(filepath.Ext(name), ".md") }

// MemoryFileEvent reads the memory file rel (slash-separated) under dir
// and returns its file.upserted event for the project dirPath, with the
// sha256 of its content as ContentHash. A file over MaxMemoryFileBytes is
// an error.
func MemoryFileEvent(dir, rel, dirPath string) (memindex.Event, error) {
	content, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return memindex.Event{}, err
	}
	if len(content) > MaxMemoryFileBytes {
		return memindex.Event{}, fmt.Errorf("%s is %d bytes, over the %d an event may carry", rel, len(content), MaxMemoryFileBytes)
	}
	sum := sha256.Sum256(content)
	return memindex.Event{Type: memindex.TypeFileUpserted, Path: rel, DirPath: dirPath,
		Content: string(content), ContentHash: hex.EncodeToString(sum[:])}, nil
}
