package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// envDuration returns the environment variable name parsed as a duration,
// or def when unset or not a duration.
func envDuration(name string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

// envBool returns the boolean environment variable name, or def when
// unset; a value that is not a boolean is an error naming the variable.
func envBool(name string, def bool) (bool, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, fmt.Errorf("%s=%q: want true or false", name, v)
	}
	return b, nil
}
