package secret

import (
	"fmt"
	"os"
	"strings"
)

// Get returns the value of the first of names that is set, read from the
// environment variable itself or from the file named by NAME_FILE; "" when
// none is set. An unreadable NAME_FILE is an error naming the variable.
func Get(names ...string) (string, error) {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v, nil
		}
		if f := os.Getenv(n + "_FILE"); f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return "", fmt.Errorf("%s_FILE: %w", n, err)
			}
			return strings.TrimSpace(string(b)), nil
		}
	}
	return "", nil
}

// Redact returns s with the value of each of names that is set (read as Get
// reads it: the variable or its NAME_FILE) replaced by with. Values shorter
// than 4 bytes are left alone: they would blank ordinary words.
func Redact(s, with string, names ...string) string {
	for _, n := range names {
		if v, _ := Get(n); len(v) >= 4 {
			s = strings.ReplaceAll(s, v, with)
		}
	}
	return s
}
