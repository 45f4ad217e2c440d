package consumer_test

import (
	"errors"
	"io/fs"
	"os"
)

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
