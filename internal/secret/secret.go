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
