package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// stateVersion is the version of the state file's format.
const stateVersion = 1

// state is what the stream acknowledged of one folder: its file.
type state struct {
	Version   int    `json:"version"`
	Namespace string `json:"namespace"`
	Dir       string `json:"dir"`
	DirPath   string `json:"dirPath"`
	// Files maps each path sent and not deleted since to the content hash
	// of its last acknowledged file.upserted.
	Files map[string]string `json:"files"`
}

// loadState reads the state file at path; a missing file is an empty state
// for want's folder. A file of another folder, namespace or dirPath is an
// error: sending against it would delete the other folder's files.
func loadState(path string, want state) (*state, error) {
	want.Version, want.Files = stateVersion, map[string]string{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &want, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrState, path, err)
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil || s.Version != stateVersion {
		return nil, fmt.Errorf("%w %s is not a version %d state file (%v); remove it to sync from scratch", ErrState, path, stateVersion, err)
	}
	if s.Namespace != want.Namespace || s.Dir != want.Dir || s.DirPath != want.DirPath {
		return nil, fmt.Errorf("%w %s is for folder %s, namespace %s, dirPath %q, not %s, %s, %q; name another state file",
			ErrState, path, s.Dir, s.Namespace, s.DirPath, want.Dir, want.Namespace, want.DirPath)
	}
	if s.Files == nil {
		s.Files = map[string]string{}
	}
	return &s, nil
}

// save writes s to path through a temporary file renamed over it, so a
// crash leaves the old state or the new one.
func (s *state) save(path string) error {
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%w %s: %v", ErrState, path, err)
	}
	return nil
}
